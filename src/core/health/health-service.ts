import type { StoreLifecycle } from '../../store/store-contract.js';
import type { UpstreamProbe } from '../models/upstream-probe.js';
import type { ActivePause } from '../limits/upstream-pauses.js';
import type { CapacityLoad } from '../limits/upstream-capacity.js';

export interface UpstreamCheck {
  status: 'ok' | 'fail' | 'skipped';
  checked_at?: string;
  latency_ms?: number;
  code?: string;
  /** The upstream's circuit breaker, when it is not closed: skipped (`open`) or letting one probe through. */
  circuit?: 'open' | 'half_open';
  /**
   * The upstream's models held after its 429 + Retry-After, per kind of key (`configured`, or `caller`: callers'
   * own X-Upstream-Key, `keys` of them). A pause holds one model, so it does not make the upstream unhealthy.
   */
  paused?: Array<{
    upstream_model: string;
    key: 'configured' | 'caller';
    keys: number;
    paused_until: string;
    retry_after_seconds: number;
  }>;
  /**
   * Calls to this upstream in flight and waiting for a slot in the process that answered (with WORKERS > 1, one
   * worker's share; /metrics adds them up), and its bound (`max_concurrent` / `max_connections`) when one is set.
   */
  load?: { in_flight: number; queued: number; max_concurrent?: number };
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
  /**
   * The price catalog in use (prices and windows of models whose config gives none): the day its figures are the
   * providers' list prices, how many days ago that is, and how many models it prices. Absent: no catalog.
   */
  price_catalog?: { as_of: string; age_days: number; models: number };
  /** Which process answered (with WORKERS > 1, each worker answers for itself): its pid and worker id. */
  instance?: { pid: number; worker?: number };
  /** The config file this process runs, and the last reload that failed (docs/config.md, "Live reload"). */
  config?: ConfigStatus;
  notes?: string[];
}

/** What health shows without the admin token: the status and each check's status, nothing else. */
export interface PublicHealthReport {
  status: HealthReport['status'];
  time: string;
  checks: {
    store: { status: 'ok' | 'fail' };
    upstreams: Record<string, { status: UpstreamCheck['status'] }>;
    rate_limits?: { status: 'ok' | 'fail' };
  };
}

/**
 * The public view of a report: enough for a load balancer or an uptime check (the status, each check's status by
 * upstream name), nothing an outsider could use: no config file path or reload problems (which may name keys
 * pasted in the wrong place), no process id, versions, latencies, loads, pauses or store kinds.
 */
export function publicHealth(report: HealthReport): PublicHealthReport {
  const view: PublicHealthReport = {
    status: report.status,
    time: report.time,
    checks: {
      store: { status: report.checks.store.status },
      upstreams: Object.fromEntries(
        Object.entries(report.checks.upstreams).map(([name, check]) => [name, { status: check.status }]),
      ),
    },
  };
  if (report.checks.rate_limits) view.checks.rate_limits = { status: report.checks.rate_limits.status };
  return view;
}

export interface ConfigStatus {
  /** When the running config was read (start, or the last applied reload). */
  loaded_at: string;
  /** Short SHA-256 of the file's bytes (`none`: no config file). */
  version: string;
  /** The last reload that failed since the last that applied: when, which file, each problem; null: none. */
  last_error: { at: string; file: string; problems: string[] } | null;
}

export interface HealthServiceOptions {
  version: string;
  environment: string;
  store: StoreLifecycle;
  /** The configured upstreams' probes (a function: a config reload changes them). */
  probes: () => readonly UpstreamProbe[];
  isShuttingDown: () => boolean;
  /** Present when limits are configured (a function: a config reload may add or remove them). */
  limits?: () => { kind: string; isHealthy: () => boolean } | undefined;
  instance?: { pid: number; worker?: number };
  config?: () => ConfigStatus;
  /** Upstreams whose circuit breaker is not closed. */
  circuits?: () => Record<string, 'open' | 'half_open' | 'closed'>;
  /** Pauses in force (shared by every instance through the pause store). */
  pauses?: () => Promise<ActivePause[]>;
  /** Calls in flight and queued per upstream, in this process. */
  loads?: () => Array<[string, CapacityLoad]>;
  /** The price catalog's date (YYYY-MM-DD) and size. */
  priceCatalog?: () => { asOf: string; models: number } | undefined;
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
    const [store, upstreamEntries, pauses] = await Promise.all([
      this.checkStore(),
      this.checkUpstreams(),
      this.options.pauses?.() ?? [],
    ]);
    const circuits = this.options.circuits?.() ?? {};
    const loads = new Map(this.options.loads?.() ?? []);
    const nowMs = Date.now();
    for (const [name, check] of upstreamEntries) {
      const load = loads.get(name);
      if (load)
        check.load = {
          in_flight: load.inFlight,
          queued: load.queued,
          ...(load.bound === undefined ? {} : { max_concurrent: load.bound }),
        };
      const circuit = circuits[name];
      if (circuit === 'open' || circuit === 'half_open') check.circuit = circuit;
      const paused = pauses.filter((p) => p.upstream === name && p.untilMs > nowMs);
      if (paused.length > 0) {
        check.paused = paused.map((p) => ({
          upstream_model: p.upstreamModel,
          key: p.key,
          keys: p.keys,
          paused_until: new Date(p.untilMs).toISOString(),
          retry_after_seconds: Math.max(1, Math.ceil((p.untilMs - nowMs) / 1000)),
        }));
      }
    }
    const upstreams = Object.fromEntries(upstreamEntries);
    const notes: string[] = [];
    if (upstreamEntries.length === 0) notes.push('no upstream configured: chat answers 503 no_upstream_configured');
    const limits = this.options.limits?.();
    const limitsOk = limits === undefined || limits.isHealthy();
    const healthy =
      store.status === 'ok' &&
      limitsOk &&
      upstreamEntries.length > 0 &&
      upstreamEntries.every(([, c]) => c.status !== 'fail' && c.circuit === undefined);
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
    const catalog = this.options.priceCatalog?.();
    if (catalog)
      report.price_catalog = {
        as_of: catalog.asOf,
        age_days: Math.max(0, Math.floor((now.getTime() - Date.parse(catalog.asOf)) / 86_400_000)),
        models: catalog.models,
      };
    if (this.options.instance) report.instance = this.options.instance;
    if (this.options.config) report.config = this.options.config();
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
      this.options.probes().map(async (probe): Promise<[string, UpstreamCheck]> => {
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
