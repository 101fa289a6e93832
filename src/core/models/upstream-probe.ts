import { isGatewayError } from '../../errors/gateway-error.js';
import type { Provider, UpstreamModel } from '../../providers/provider-contract.js';

export interface ProbeResult {
  ok: boolean;
  checkedAt: string;
  latencyMs: number;
  models: UpstreamModel[];
  /** Our error code when the probe failed (never the upstream's raw text: health is unauthenticated). */
  code: string | undefined;
}

const DEFAULT_TTL_MS = 5_000;
const PROBE_TIMEOUT_MS = 3_000;

/**
 * A token-free check of one upstream: its model list (GET /models costs no tokens), cached for a few seconds and
 * shared by concurrent callers, so neither the health route nor the models route can be turned into a flood of
 * upstream calls.
 */
export class UpstreamProbe {
  private cached: { result: ProbeResult; at: number } | undefined;
  private inFlight: Promise<ProbeResult> | undefined;

  constructor(
    readonly provider: Provider,
    private readonly ttlMs = DEFAULT_TTL_MS,
  ) {}

  check(): Promise<ProbeResult> {
    if (this.cached && Date.now() - this.cached.at < this.ttlMs) return Promise.resolve(this.cached.result);
    this.inFlight ??= this.run().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async run(): Promise<ProbeResult> {
    const started = performance.now();
    const checkedAt = new Date().toISOString();
    let result: ProbeResult;
    try {
      const models = await this.provider.listModels(AbortSignal.timeout(PROBE_TIMEOUT_MS));
      result = { ok: true, checkedAt, latencyMs: elapsed(started), models, code: undefined };
    } catch (error) {
      const code = isGatewayError(error) ? error.code : 'upstream_unreachable';
      result = { ok: false, checkedAt, latencyMs: elapsed(started), models: [], code };
    }
    this.cached = { result, at: Date.now() };
    return result;
  }
}

function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 10) / 10;
}
