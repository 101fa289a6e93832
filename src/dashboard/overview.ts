import type {
  OutboxStore,
  UsageRecord,
  UsageStore,
  UsageSummaryRow,
  UsageTimelineRow,
} from '../store/store-contract.js';
import { LATENCY_BIN_EDGES_MS } from '../store/usage-sql.js';
import type { ConfigStatus, HealthReport } from '../core/health/health-service.js';
import type { UpstreamAttemptSummary } from '../observability/upstream-attempts.js';
import { eventKindOf } from '../webhooks/dispatcher.js';
import type { BatchInFlight } from '../store/batch-contract.js';
import { cacheReadShare, roundUsd } from '../store/usage-sql.js';
import type { VectorUsageView } from '../core/retrieval/vector-usage.js';
import type { ToolCallStore, ToolCallSummaryRow } from '../store/tool-call-contract.js';

/** The windows the dashboard offers, with their bucket size (about 60–100 points per chart). */
export const WINDOWS = {
  '1h': { spanMs: 3_600_000, bucketMs: 60_000 },
  '24h': { spanMs: 86_400_000, bucketMs: 900_000 },
  '7d': { spanMs: 7 * 86_400_000, bucketMs: 7_200_000 },
} as const;
export type WindowName = keyof typeof WINDOWS;

export interface Percentiles {
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

export interface OverviewPoint extends Percentiles {
  time: string;
  requests: number;
  serverErrors: number;
  clientErrors: number;
  tokens: number;
  costUsd: number;
}

export interface DashboardOverview {
  generatedAt: string;
  /** False when usage records are off (usage.enabled: false): the charts then show nothing, by configuration. */
  usageRecords: boolean;
  window: WindowName;
  from: string;
  bucketSeconds: number;
  /** The window's timeline rows summed (requests, errors, tokens, spend), with their latency percentiles. */
  totals: Percentiles &
    Omit<UsageTimelineRow, 'bucketMs' | 'bin'> & {
      /** The share of all input read from providers' prompt caches (null: no input). */
      cacheReadShare: number | null;
    };
  series: OverviewPoint[];
  /**
   * Per model; `unpriced` on a model that has no price now (neither its config nor the price catalog gives one) and
   * whose calls in the window cost nothing: its cost is unknown, which the page says rather than `$0.000000`.
   */
  byModel: Array<UsageSummaryRow & { unpriced?: true }>;
  byCaller: UsageSummaryRow[];
  /** Requests, tokens and cost per API route (chat, responses, embeddings, models). */
  byRoute: UsageSummaryRow[];
  recentFailures: Array<
    Pick<UsageRecord, 'requestId' | 'route' | 'model' | 'upstream' | 'status' | 'code' | 'caller' | 'latencyMs'> & {
      time: string;
    }
  >;
  /** The config file this process runs, and the last refused reload (docs/config.md, "Live reload"). */
  config: ConfigStatus | null;
  upstreams: Array<{
    name: string;
    status: string;
    circuit: string;
    latencyMs: number | null;
    code: string | null;
    checkedAt: string | null;
    /** This instance's attempts to the upstream since it started: a failing primary hidden by a fallback shows here. */
    attempts: UpstreamAttemptSummary;
    /** Upstream models held after the upstream's 429 + Retry-After. */
    pausedModels: string[];
  }>;
  /** Batches not yet ended, oldest first, with their progress. */
  batches: Array<{
    id: string;
    api: string;
    caller: string;
    endpoint: string;
    status: string;
    /** `gateway`, `upstream <name>` (forwarded to its batch API), or `undecided` (not started yet). */
    runBy: string;
    total: number;
    succeeded: number;
    errored: number;
    /** Lines with an outcome (succeeded, errored, canceled, expired). */
    done: number;
    createdAt: string;
    expiresAt: string;
  }>;
  /**
   * Vector stores (docs/retrieval.md, "Operators"): every caller's together, and per caller the ones holding the
   * most bytes (at most 100); null: the Vector Stores API is not served.
   */
  vectorStores: {
    total: VectorStoreUsageRow;
    byCaller: Array<VectorStoreUsageRow & { caller: string }>;
    readAt: string;
  } | null;
  /**
   * MCP tool calls in the window (docs/mcp.md, "Records"): per caller, server and tool, the most called first (at
   * most 100 rows), and all of them together; null: tool-call records are not kept (usage records off).
   */
  toolCalls: {
    rows: ToolCallSummaryRow[];
    total: { calls: number; errors: number; refused: number };
  } | null;
  webhooks: {
    subscriptions: Array<{ id: string; backlog: number }>;
    deadLetters: Array<{
      id: string;
      subscription: string;
      event: string;
      attempts: number;
      lastError: string | null;
      createdAt: string;
    }>;
  } | null;
}

/** A caller's (or everyone's) stores, files by status and bytes, as the page shows them. */
export interface VectorStoreUsageRow {
  stores: number;
  files: number;
  inProgress: number;
  failed: number;
  bytes: number;
}

export interface OverviewSources {
  usage: UsageStore | undefined;
  /** Writes buffered usage records first, so the page shows requests made a moment ago. */
  flushUsage: () => Promise<void>;
  health: () => Promise<HealthReport>;
  /** Attempts and failovers per upstream (this instance, since it started). */
  attempts?: () => Record<string, UpstreamAttemptSummary>;
  outbox: OutboxStore | undefined;
  /** The webhook subscriptions' ids (a function when a config reload may change them). */
  subscriptions: readonly string[] | (() => readonly string[]);
  /** Batches not yet ended (none: the batch APIs are off). */
  batches?: () => Promise<readonly BatchInFlight[]>;
  /** The vector stores' usage (none: the Vector Stores API is off). */
  vectorStores?: () => Promise<VectorUsageView>;
  /** Whether calls of a model are costed now (its config's or the price catalog's prices); absent: all are. */
  priced?: (model: string) => boolean;
  /** The MCP tool-call records, and how to write those still buffered (none: not kept). */
  toolCalls?: { store: ToolCallStore; flush: () => Promise<void> };
}

const TOOL_CALL_ROWS = 100;

/** The summary's group of records that named no model (a body refused before its model was read). */
const NO_MODEL = '(none)';

const RECENT_FAILURES = 20;
const DEAD_LETTERS = 20;

/** Everything the dashboard page shows, in one JSON document (GET /dashboard/api/overview). */
export async function buildOverview(
  sources: OverviewSources,
  window: WindowName,
  nowMs: number,
): Promise<DashboardOverview> {
  const { spanMs, bucketMs } = WINDOWS[window];
  const count = Math.round(spanMs / bucketMs);
  const fromMs = Math.floor(nowMs / bucketMs) * bucketMs - (count - 1) * bucketMs;
  const toMs = nowMs + 1;
  await Promise.all([sources.flushUsage(), sources.toolCalls?.flush()]);
  const usage = sources.usage;
  const tools = sources.toolCalls?.store;
  const [timeline, byModel, byCaller, byRoute, failures, health, webhooks, batches, vectors, toolRows] =
    await Promise.all([
      usage ? usage.timeline(fromMs, toMs, bucketMs) : Promise.resolve([]),
      usage ? usage.summarize('model', fromMs, toMs) : Promise.resolve([]),
      usage ? usage.summarize('caller', fromMs, toMs) : Promise.resolve([]),
      usage ? usage.summarize('route', fromMs, toMs) : Promise.resolve([]),
      usage ? usage.recent(RECENT_FAILURES, true) : Promise.resolve([]),
      sources.health(),
      webhookState(sources),
      sources.batches ? sources.batches() : Promise.resolve([]),
      sources.vectorStores ? sources.vectorStores() : Promise.resolve(undefined),
      tools ? tools.summarizeToolCalls(fromMs, toMs, TOOL_CALL_ROWS) : Promise.resolve(undefined),
    ]);
  const { series, totals } = summarizeTimeline(timeline, fromMs, bucketMs, count);
  const attempts = sources.attempts?.() ?? {};
  return {
    generatedAt: new Date(nowMs).toISOString(),
    usageRecords: usage !== undefined,
    window,
    from: new Date(fromMs).toISOString(),
    bucketSeconds: bucketMs / 1000,
    totals,
    series,
    byModel: byModel.sort((a, b) => b.requests - a.requests).map((row) => withPriceState(row, sources.priced)),
    byCaller: byCaller.sort((a, b) => b.requests - a.requests),
    byRoute: byRoute.sort((a, b) => b.requests - a.requests),
    recentFailures: failures.map((r) => ({
      time: new Date(r.timeMs).toISOString(),
      requestId: r.requestId,
      route: r.route,
      model: r.model,
      upstream: r.upstream,
      status: r.status,
      code: r.code,
      caller: r.caller,
      latencyMs: r.latencyMs,
    })),
    config: health.config ?? null,
    upstreams: Object.entries(health.checks.upstreams).map(([name, check]) => ({
      name,
      status: check.status,
      circuit: check.circuit ?? 'closed',
      latencyMs: check.latency_ms ?? null,
      code: check.code ?? null,
      checkedAt: check.checked_at ?? null,
      attempts: attempts[name] ?? { attempts: 0, ok: 0, failed: 0, failovers: 0, lastFailure: null },
      pausedModels: (check.paused ?? []).map((p) => p.upstream_model),
    })),
    toolCalls: toolRows ? { rows: toolRows, total: toolCallTotal(toolRows) } : null,
    webhooks,
    batches: batches.map(batchProgress),
    vectorStores: vectors
      ? {
          total: vectorRow(vectors.total),
          byCaller: vectors.owners.map((o) => ({ caller: o.owner, ...vectorRow(o) })),
          readAt: new Date(vectors.readMs).toISOString(),
        }
      : null,
  };
}

/** The rows shown summed (a window with more than 100 groups: the 100 most called). */
function toolCallTotal(rows: readonly ToolCallSummaryRow[]): { calls: number; errors: number; refused: number } {
  const total = { calls: 0, errors: 0, refused: 0 };
  for (const row of rows) {
    total.calls += row.calls;
    total.errors += row.errors;
    total.refused += row.refused;
  }
  return total;
}

function vectorRow(usage: VectorUsageView['total']): VectorStoreUsageRow {
  const counts = usage.fileCounts;
  return {
    stores: usage.stores,
    files: counts.total,
    inProgress: counts.in_progress,
    failed: counts.failed,
    bytes: usage.usageBytes,
  };
}

/** A batch in flight as the page shows it: whose, what, and how far. */
function batchProgress({ batch, runBy }: BatchInFlight): DashboardOverview['batches'][number] {
  const { counts } = batch;
  const done = counts.succeeded + counts.errored + counts.canceled + counts.expired;
  return {
    id: batch.id,
    api: batch.api,
    caller: batch.owner,
    endpoint: batch.endpoint,
    status: batch.status,
    runBy,
    total: counts.total,
    succeeded: counts.succeeded,
    errored: counts.errored,
    done,
    createdAt: new Date(batch.createdMs).toISOString(),
    expiresAt: new Date(batch.expiresMs).toISOString(),
  };
}

async function webhookState(sources: OverviewSources): Promise<DashboardOverview['webhooks']> {
  const outbox = sources.outbox;
  const ids = typeof sources.subscriptions === 'function' ? sources.subscriptions() : sources.subscriptions;
  if (!outbox || ids.length === 0) return null;
  const [subscriptions, dead] = await Promise.all([
    Promise.all(ids.map(async (id) => ({ id, backlog: await outbox.backlog(id) }))),
    outbox.listDead(DEAD_LETTERS),
  ]);
  return {
    subscriptions,
    deadLetters: dead.map((d) => ({
      id: d.id,
      subscription: d.subscription,
      event: eventKindOf(d.body),
      attempts: d.attempts,
      lastError: d.lastError ?? null,
      createdAt: new Date(d.createdMs).toISOString(),
    })),
  };
}

/** A model's row marked `unpriced` when it has no price and its calls cost nothing (see DashboardOverview.byModel). */
function withPriceState(
  row: UsageSummaryRow,
  priced: ((model: string) => boolean) | undefined,
): UsageSummaryRow & { unpriced?: true } {
  if (!priced || row.group === NO_MODEL || row.costUsd !== 0 || priced(row.group)) return row;
  return { ...row, unpriced: true };
}

/** Fills empty buckets with zeros and reads percentiles from the latency bins of each bucket and of the whole window. */
export function summarizeTimeline(
  rows: readonly UsageTimelineRow[],
  fromMs: number,
  bucketMs: number,
  count: number,
): Pick<DashboardOverview, 'series' | 'totals'> {
  const bins = LATENCY_BIN_EDGES_MS.length + 1;
  const perBucket = Array.from({ length: count }, () => ({
    requests: 0,
    serverErrors: 0,
    clientErrors: 0,
    tokens: 0,
    costUsd: 0,
    bins: new Array<number>(bins).fill(0),
  }));
  const all = new Array<number>(bins).fill(0);
  const totals = {
    requests: 0,
    serverErrors: 0,
    clientErrors: 0,
    promptTokens: 0,
    completionTokens: 0,
    cacheReadTokens: 0,
    costUsd: 0,
    cacheSavingsUsd: 0,
  };
  for (const row of rows) {
    const bucket = perBucket[Math.floor((row.bucketMs - fromMs) / bucketMs)];
    if (!bucket) continue;
    bucket.requests += row.requests;
    bucket.serverErrors += row.serverErrors;
    bucket.clientErrors += row.clientErrors;
    bucket.tokens += row.promptTokens + row.completionTokens;
    bucket.costUsd += row.costUsd;
    bucket.bins[row.bin] = (bucket.bins[row.bin] ?? 0) + row.requests;
    all[row.bin] = (all[row.bin] ?? 0) + row.requests;
    totals.requests += row.requests;
    totals.serverErrors += row.serverErrors;
    totals.clientErrors += row.clientErrors;
    totals.promptTokens += row.promptTokens;
    totals.completionTokens += row.completionTokens;
    totals.cacheReadTokens += row.cacheReadTokens;
    totals.costUsd += row.costUsd;
    totals.cacheSavingsUsd += row.cacheSavingsUsd;
  }
  const series = perBucket.map((b, i) => ({
    time: new Date(fromMs + i * bucketMs).toISOString(),
    requests: b.requests,
    serverErrors: b.serverErrors,
    clientErrors: b.clientErrors,
    tokens: b.tokens,
    costUsd: roundUsd(b.costUsd),
    ...percentiles(b.bins),
  }));
  return {
    series,
    totals: {
      ...totals,
      cacheReadShare: cacheReadShare(totals.cacheReadTokens, totals.promptTokens),
      costUsd: roundUsd(totals.costUsd),
      cacheSavingsUsd: roundUsd(totals.cacheSavingsUsd) + 0,
      ...percentiles(all),
    },
  };
}

/** p50/p95/p99 (ms) from bin counts, interpolated linearly inside the bin the rank falls in. */
export function percentiles(counts: readonly number[]): Percentiles {
  const total = counts.reduce((sum, n) => sum + n, 0);
  if (total === 0) return { p50: null, p95: null, p99: null };
  const at = (q: number): number => {
    const rank = q * total;
    let before = 0;
    for (let bin = 0; bin < counts.length; bin++) {
      const n = counts[bin] ?? 0;
      if (n > 0 && before + n >= rank) {
        const lower = bin === 0 ? 0 : (LATENCY_BIN_EDGES_MS[bin - 1] as number);
        const upper = LATENCY_BIN_EDGES_MS[bin] ?? lower * 1.25;
        return Math.round((lower + ((upper - lower) * (rank - before)) / n) * 10) / 10;
      }
      before += n;
    }
    return LATENCY_BIN_EDGES_MS.at(-1) as number;
  };
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99) };
}
