import type { GatewayConfig } from '../../config/types.js';
import type { ProviderSet } from '../../providers/provider-registry.js';
import type { ConfigStatus } from '../health/health-service.js';
import type { ModelRouter } from '../models/model-router.js';
import type { PriceBook } from '../models/price-book.js';
import type { RateLimitService } from '../limits/rate-limit-service.js';
import type { UpstreamProbe } from '../models/upstream-probe.js';

/**
 * Everything the gateway derives from one reading of the config file. A call takes what it needs from the current
 * generation once, when it is planned (CallPipeline), and keeps it to its end; a reload makes a new generation and
 * the next calls use it. State that belongs to the upstreams rather than to a configuration (circuits, pauses,
 * calls in flight, limiter windows, connection pools of unchanged upstreams) lives outside and is carried over.
 */
export interface ConfigGeneration {
  readonly config: GatewayConfig;
  readonly providers: ProviderSet;
  readonly router: ModelRouter;
  readonly prices: PriceBook;
  readonly limits: RateLimitService;
  /** One per configured upstream (kept with its provider, so a kept upstream keeps its last probe result). */
  readonly probes: readonly UpstreamProbe[];
  /** The default upstream's probe (the models listing shows its models). */
  readonly defaultProbe: UpstreamProbe | undefined;
  readonly loadedAt: Date;
}

/** The current generation, and what health, metrics and the dashboard say about reloads. */
export class ConfigGenerations {
  private generation: ConfigGeneration;
  private lastError: ConfigStatus['last_error'] = null;
  /** Reloads applied and refused since start (`llmgw_config_reloads_total`, `llmgw_config_reload_failures_total`). */
  applied = 0;
  failed = 0;

  constructor(first: ConfigGeneration) {
    this.generation = first;
  }

  get current(): ConfigGeneration {
    return this.generation;
  }

  /** The running config file's version (`none` without a file, `unknown` for a config built by hand). */
  get version(): string {
    return this.generation.config.source?.version ?? 'unknown';
  }

  /** Makes `next` current; returns the one it replaced. */
  apply(next: ConfigGeneration): ConfigGeneration {
    const previous = this.generation;
    this.generation = next;
    this.lastError = null;
    this.applied += 1;
    return previous;
  }

  /** A reload that was refused: the running generation stays; health shows why until a reload applies. */
  refuse(file: string, problems: string[]): void {
    this.lastError = { at: new Date().toISOString(), file, problems: problems.map(publicProblem) };
    this.failed += 1;
  }

  /** The file is back to the bytes that run (after a refused edit): nothing to apply, nothing wrong any more. */
  clearError(): boolean {
    const had = this.lastError !== null;
    this.lastError = null;
    return had;
  }

  status(): ConfigStatus {
    return {
      loaded_at: this.generation.loadedAt.toISOString(),
      version: this.version,
      last_error: this.lastError,
    };
  }
}

/**
 * A problem as health (which answers without a token) shows it: its first line, bounded. A parser's message may
 * quote the bad text (`Unexpected token ... "{\"a\": ...` for JSON, a YAML error's context lines): only the file's
 * name and the words "not valid JSON/YAML" are kept of it; the log line has the whole message.
 */
function publicProblem(problem: string): string {
  const parse = /^(.*?: not valid (?:JSON|YAML))/.exec(problem);
  return (parse?.[1] ?? problem.split('\n')[0] ?? '').slice(0, 300);
}
