import type { StoreLifecycle } from '../store/contract.js';
import type { UpstreamProbe } from './upstream-probe.js';

export interface UpstreamCheck {
  status: 'ok' | 'fail' | 'skipped';
  checked_at?: string;
  latency_ms?: number;
  code?: string;
  /** The upstream's circuit breaker, when it is not closed: skipped (`open`) or letting one probe through. */
  circuit?: 'open' | 'half_open';
}

export interface HealthReport {
  status: 'ok' | 'degraded' | 'shutting_down';
  version: string;
  environment: string;
  time: string;
  started_at: string;
  uptime_seconds: number;
  checks: {
    store: { status: 'ok' | 'fail'; kind: string; latency_ms: number };
    upstreams: Record<string, UpstreamCheck>;
    /** Present when limits are configured: whether their store answered the last admission. */
    rate_limits?: { status: 'ok' | 'fail'; store: string };
  };
  notes?: string[];
}

export interface HealthServiceOptions {
  version: string;
  environment: string;
  store: StoreLifecycle;
  probes: UpstreamProbe[];
  isShuttingDown: () => boolean;
  limits?: { kind: string; isHealthy: () => boolean } | undefined;
  /** Upstreams whose circuit breaker is not closed. */
  circuits?: () => Record<string, 'open' | 'half_open' | 'closed'>;
}

/**
 * The health report: `ok` when the store answers and every upstream answers its token-free probe; `degraded`
 * when anything does not (or no upstream is configured) but the gateway can still answer something;
 * `shutting_down` while draining, so load balancers stop sending traffic. Nothing secret: names and codes only.
 */
export class HealthService {
  private readonly startedAt = new Date();

  constructor(private readonly options: HealthServiceOptions) {}

  async report(): Promise<HealthReport> {
    const [store, upstreamEntries] = await Promise.all([this.checkStore(), this.checkUpstreams()]);
    const circuits = this.options.circuits?.() ?? {};
    for (const [name, check] of upstreamEntries) {
      const circuit = circuits[name];
      if (circuit === 'open' || circuit === 'half_open') check.circuit = circuit;
    }
    const upstreams = Object.fromEntries(upstreamEntries);
    const notes: string[] = [];
    if (upstreamEntries.length === 0) notes.push('no upstream configured: chat answers 503 no_upstream_configured');
    const limits = this.options.limits;
    const limitsOk = limits === undefined || limits.isHealthy();
    const healthy =
      store.status === 'ok' && limitsOk && upstreamEntries.length > 0 && upstreamEntries.every(([, c]) => c.status !== 'fail' && c.circuit === undefined);
    const now = new Date();
    const report: HealthReport = {
      status: this.options.isShuttingDown() ? 'shutting_down' : healthy ? 'ok' : 'degraded',
      version: this.options.version,
      environment: this.options.environment,
      time: now.toISOString(),
      started_at: this.startedAt.toISOString(),
      uptime_seconds: Math.floor((now.getTime() - this.startedAt.getTime()) / 1000),
      checks: { store, upstreams },
    };
    if (limits) report.checks.rate_limits = { status: limitsOk ? 'ok' : 'fail', store: limits.kind };
    if (notes.length > 0) report.notes = notes;
    return report;
  }

  private async checkStore(): Promise<HealthReport['checks']['store']> {
    const started = performance.now();
    const kind = this.options.store.kind;
    try {
      await this.options.store.ping();
      return { status: 'ok', kind, latency_ms: round(performance.now() - started) };
    } catch {
      return { status: 'fail', kind, latency_ms: round(performance.now() - started) };
    }
  }

  private checkUpstreams(): Promise<Array<[string, UpstreamCheck]>> {
    return Promise.all(
      this.options.probes.map(async (probe): Promise<[string, UpstreamCheck]> => {
        if (!probe.provider.probeable) return [probe.provider.name, { status: 'skipped' }];
        const result = await probe.check();
        const check: UpstreamCheck = {
          status: result.ok ? 'ok' : 'fail',
          checked_at: result.checkedAt,
          latency_ms: result.latencyMs,
        };
        if (result.code) check.code = result.code;
        return [probe.provider.name, check];
      }),
    );
  }
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
