import { droppedLogLines } from './logger.js';
import cluster from 'node:cluster';
import { Gauge, Registry } from 'prom-client';
import { answerClusterCollects, scrapeCluster } from './cluster-metrics.js';
import { CollectedCounter, FastCounter, FastHistogram } from './fast-metrics.js';
import type { UpstreamAttemptStats } from './upstream-attempts.js';
import type { RequestRecord } from '../request/request-record.js';
import { USAGE_ANOMALIES } from '../providers/provider-contract.js';
import type { CircuitState } from '../core/pipeline/circuit-breaker.js';
import type { ActivePause } from '../core/limits/upstream-pauses.js';
import type { CapacityLoad } from '../core/limits/upstream-capacity.js';

interface Series {
  request(status: number, code: string): { inc(by?: number): void };
  duration: { observe(value: number): void };
  ttfb(): { observe(value: number): void };
  prompt: { inc(by?: number): void };
  completion: { inc(by?: number): void };
  /** llmgw_tokens_by_kind_total's children: the parts of prompt and completion, apart (they add up to both). */
  input: { inc(by?: number): void };
  cacheRead: { inc(by?: number): void };
  cacheWrite: { inc(by?: number): void };
  output: { inc(by?: number): void };
  reasoning: { inc(by?: number): void };
  cost: { inc(by?: number): void };
}

/** Distinct model label values kept before the rest are counted as `other` (model ids come from callers). */
const MAX_MODEL_LABELS = 200;
const CIRCUIT_VALUE: Record<CircuitState, number> = { closed: 0, half_open: 1, open: 2 };

export interface MetricsSources {
  circuits: () => Record<string, CircuitState>;
  /** Every upstream attempt and failover (the same tallies the dashboard shows). */
  attempts?: UpstreamAttemptStats;
  /** Upstream pauses in force (read from the shared pause store). */
  pauses?: () => Promise<ActivePause[]>;
  /** Calls in flight and waiting for a slot per upstream, in this process. */
  loads?: () => Array<[string, CapacityLoad]>;
  /** Deliveries waiting per webhook subscription (undefined: no webhooks). */
  webhookBacklog?: () => Promise<Record<string, number>>;
  /** Usage records the store refused and the recorder set aside (undefined: usage recording off). */
  deadLetteredUsage?: () => number;
  /** Config reloads applied and refused in this process, and the version of the config file it runs. */
  configReloads?: () => { applied: number; failed: number; version: string };
}

/**
 * Prometheus metrics (prom-client, one registry per app). Updated once per API request when its answer has been
 * sent; the label children are cached so a request costs a few map lookups and increments. Served at
 * `GET /metrics` behind the admin token (docs/metrics.md).
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests: FastCounter;
  private readonly duration: FastHistogram;
  private readonly ttfb: FastHistogram;
  private readonly tokens: FastCounter;
  private readonly tokenKinds: FastCounter;
  private readonly cost: FastCounter;
  private readonly upstreamErrors: FastCounter;
  private readonly refusals: FastCounter;
  private readonly cacheLookups: FastCounter;
  private readonly usageAnomalies: FastCounter;
  private readonly series = new Map<string, Map<string, Series>>();
  private readonly models = new Set<string>();

  // eslint-disable-next-line max-lines-per-function -- every metric family is declared here, the one place to find a metric's name and help
  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    const r = this.registry;
    this.requests = new FastCounter(
      'llmgw_requests_total',
      'API requests by route, model, status and error code',
      ['route', 'model', 'status', 'code'],
      r,
    );
    this.duration = new FastHistogram(
      'llmgw_request_duration_seconds',
      'Arrival to last byte, by route and model',
      ['route', 'model'],
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      r,
    );
    this.ttfb = new FastHistogram(
      'llmgw_stream_ttfb_seconds',
      'Streams: arrival to first byte, by model',
      ['model'],
      [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      r,
    );
    this.tokens = new FastCounter(
      'llmgw_tokens_total',
      'Tokens by model and kind (prompt, completion)',
      ['model', 'kind'],
      r,
    );
    this.tokenKinds = new FastCounter(
      'llmgw_tokens_by_kind_total',
      'Tokens by model and kind, each token in one kind (the kinds add up to prompt + completion): input (uncached input: prompt less cache reads and writes), cache_read, cache_write (input read from / written to the provider prompt cache), output (completion less reasoning), reasoning (billed as output)',
      ['model', 'kind'],
      r,
    );
    this.cost = new FastCounter('llmgw_cost_usd_total', 'Cost in USD at the registry prices, by model', ['model'], r);
    this.upstreamErrors = new FastCounter(
      'llmgw_upstream_errors_total',
      'Requests that failed on the upstream side, by upstream and code',
      ['upstream', 'code'],
      r,
    );
    this.cacheLookups = new FastCounter(
      'llmgw_cache_lookups_total',
      'Response cache results by model: hit, miss (looked up, not found), bypass (not looked up: not cacheable, no-cache, store unwell); the hit ratio is hit / (hit + miss)',
      ['model', 'result'],
      r,
    );
    this.refusals = new FastCounter(
      'llmgw_limit_refusals_total',
      'Requests refused by a rate limit or a budget',
      ['code'],
      r,
    );
    this.usageAnomalies = new FastCounter(
      'llmgw_usage_anomalies_total',
      'Requests whose upstream reported a usage figure the gateway corrected, by upstream and kind (not_a_number, negative, too_large, fractional)',
      ['upstream', 'kind'],
      r,
    );
    new CollectedCounter(
      'llmgw_log_lines_dropped_total',
      'Log lines (access lines included) dropped because the log destination could not keep up (its buffer was full)',
      () => [{ labels: {}, value: droppedLogLines() }],
      r,
    );
    const deadLettered = sources.deadLetteredUsage;
    if (deadLettered)
      new CollectedCounter(
        'llmgw_usage_records_dead_lettered_total',
        'Usage records the usage store refused, set aside (logged whole) instead of stored',
        () => [{ labels: {}, value: deadLettered() }],
        r,
      );
    if (sources.configReloads) this.configMetrics(sources.configReloads);
    const attempts = sources.attempts;
    if (attempts) {
      new CollectedCounter(
        'llmgw_upstream_attempts_total',
        'Upstream attempts (retries and fallbacks included) by upstream and outcome (ok, or the error code)',
        () => attempts.attemptSamples(),
        r,
      );
      new CollectedCounter(
        'llmgw_upstream_failovers_total',
        'Calls that moved on from an upstream to the next target, by upstream and reason (failed, circuit_open, paused)',
        () => attempts.failoverSamples(),
        r,
      );
    }
    new Gauge({
      name: 'llmgw_circuit_state',
      help: 'Circuit per upstream: 0 closed, 1 half-open, 2 open (upstreams not listed are closed)',
      labelNames: ['upstream'],
      registers,
      // Across workers: the worst state any of them sees (a sum of 2 + 2 would read as a state that does not exist).
      aggregator: 'max',
      collect() {
        this.reset();
        for (const [upstream, state] of Object.entries(sources.circuits()))
          this.set({ upstream }, CIRCUIT_VALUE[state]);
      },
    });
    if (sources.pauses) {
      const pauses = sources.pauses;
      new Gauge({
        name: 'llmgw_upstream_paused',
        help: "Keys held per upstream model after the upstream's 429 + Retry-After (key: configured, or callers' own keys)",
        labelNames: ['upstream', 'upstream_model', 'key'],
        registers,
        // Every process reads the same shared store: aggregated across workers, the value is one process's, not a sum.
        aggregator: 'max',
        async collect() {
          this.reset();
          const now = Date.now();
          for (const p of await pauses())
            if (p.untilMs > now)
              this.set({ upstream: p.upstream, upstream_model: p.upstreamModel, key: p.key }, p.keys);
        },
      });
    }
    if (sources.loads) {
      const loads = sources.loads;
      // Per process; across workers they add up (`sum`): the instance's calls in flight, its queue.
      new Gauge({
        name: 'llmgw_upstream_in_flight',
        help: 'Calls in flight to each upstream (holding a slot: from the request sent until the answer or stream ended)',
        labelNames: ['upstream'],
        registers,
        aggregator: 'sum',
        collect() {
          this.reset();
          for (const [upstream, load] of loads()) this.set({ upstream }, load.inFlight);
        },
      });
      new Gauge({
        name: 'llmgw_upstream_queued',
        help: 'Calls waiting for a slot of an upstream at its bound (max_concurrent / max_connections), at most queue_timeout_ms each',
        labelNames: ['upstream'],
        registers,
        aggregator: 'sum',
        collect() {
          this.reset();
          for (const [upstream, load] of loads()) this.set({ upstream }, load.queued);
        },
      });
    }
    if (sources.webhookBacklog) {
      const backlog = sources.webhookBacklog;
      new Gauge({
        name: 'llmgw_webhook_backlog',
        help: 'Webhook deliveries waiting (pending) per subscription',
        labelNames: ['subscription'],
        registers,
        // Every worker reads the same shared outbox: the same number, not one to add up.
        aggregator: 'max',
        async collect() {
          this.reset();
          for (const [subscription, n] of Object.entries(await backlog())) this.set({ subscription }, n);
        },
      });
    }
    if (cluster.isWorker) answerClusterCollects(this.registry);
  }

  /**
   * The text of a scrape: this process's registry, or with WORKERS > 1 the sum over every worker (through the
   * primary, src/observability/cluster-metrics.ts), so one scrape shows the instance.
   */
  async scrape(): Promise<{ contentType: string; text: string }> {
    const text = cluster.isWorker ? await scrapeCluster() : await this.registry.metrics();
    return { contentType: this.registry.contentType, text };
  }

  /**
   * Reloads applied and refused (summed across workers) and which config version each process runs: one series
   * per process (`pid`), so a rollout is complete when every series carries the new version.
   */
  private configMetrics(read: () => { applied: number; failed: number; version: string }): void {
    const r = this.registry;
    new CollectedCounter(
      'llmgw_config_reloads_total',
      'Config file reloads applied',
      () => [{ labels: {}, value: read().applied }],
      r,
    );
    new CollectedCounter(
      'llmgw_config_reload_failures_total',
      'Config file reloads refused (the file did not parse or validate; the running config was kept)',
      () => [{ labels: {}, value: read().failed }],
      r,
    );
    new Gauge({
      name: 'llmgw_config_info',
      help: 'The config file version (short SHA-256 of its bytes) each serving process runs: 1 per process',
      labelNames: ['version', 'pid'],
      registers: [r],
      aggregator: 'max',
      collect() {
        this.reset();
        this.set({ version: read().version, pid: String(process.pid) }, 1);
      },
    });
  }

  observe(record: RequestRecord): void {
    const series = this.seriesFor(record.route ?? 'unknown', this.modelLabel(record.model));
    const code = record.code ?? '';
    series.request(record.status, code).inc();
    series.duration.observe(record.latencyMs / 1000);
    if (record.firstByteMs !== undefined) series.ttfb().observe(record.firstByteMs / 1000);
    const usage = record.usage;
    if (usage) {
      series.prompt.inc(usage.prompt_tokens);
      series.completion.inc(usage.completion_tokens);
      // The parts are bounded by what they are parts of (usage-figures.ts withParts): no kind goes below 0.
      const read = usage.cache_read_tokens ?? 0;
      const write = usage.cache_write_tokens ?? 0;
      const reasoning = usage.reasoning_tokens ?? 0;
      series.input.inc(Math.max(0, usage.prompt_tokens - read - write));
      series.output.inc(Math.max(0, usage.completion_tokens - reasoning));
      if (read > 0) series.cacheRead.inc(read);
      if (write > 0) series.cacheWrite.inc(write);
      if (reasoning > 0) series.reasoning.inc(reasoning);
      if (usage.cost_usd !== undefined) series.cost.inc(usage.cost_usd);
      const anomalies = usage[USAGE_ANOMALIES];
      if (anomalies) for (const kind of anomalies) this.usageAnomalies.labels(record.upstream ?? 'unknown', kind).inc();
    }
    if (record.cacheResult !== undefined)
      this.cacheLookups.labels(this.modelLabel(record.model), record.cacheResult).inc();
    if (code.startsWith('upstream_')) {
      this.upstreamErrors.labels(record.upstream ?? 'unknown', code).inc();
    } else if (code === 'rate_limited' || code === 'budget_exceeded') {
      this.refusals.labels(code).inc();
    }
  }

  /** The children of one (route, model), found with two map lookups and no string building per request. */
  private seriesFor(route: string, model: string): Series {
    let byModel = this.series.get(route);
    if (!byModel) {
      byModel = new Map();
      this.series.set(route, byModel);
    }
    let series = byModel.get(model);
    if (!series) {
      const byStatus = new Map<number, Map<string, { inc(by?: number): void }>>();
      let ttfb: { observe(v: number): void } | undefined;
      series = {
        request: (status, code) => {
          let byCode = byStatus.get(status);
          if (!byCode) {
            byCode = new Map();
            byStatus.set(status, byCode);
          }
          let child = byCode.get(code);
          if (!child) {
            child = this.requests.labels(route, model, String(status), code);
            byCode.set(code, child);
          }
          return child;
        },
        duration: this.duration.labels(route, model),
        ttfb: () => (ttfb ??= this.ttfb.labels(model)),
        prompt: this.tokens.labels(model, 'prompt'),
        completion: this.tokens.labels(model, 'completion'),
        input: this.tokenKinds.labels(model, 'input'),
        cacheRead: this.tokenKinds.labels(model, 'cache_read'),
        cacheWrite: this.tokenKinds.labels(model, 'cache_write'),
        output: this.tokenKinds.labels(model, 'output'),
        reasoning: this.tokenKinds.labels(model, 'reasoning'),
        cost: this.cost.labels(model),
      };
      byModel.set(model, series);
    }
    return series;
  }

  private modelLabel(model: string | undefined): string {
    if (model === undefined) return '';
    if (this.models.has(model)) return model;
    if (this.models.size >= MAX_MODEL_LABELS) return 'other';
    this.models.add(model);
    return model;
  }
}
