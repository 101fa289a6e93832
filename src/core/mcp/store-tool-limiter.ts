import { randomUUID } from 'node:crypto';
import type { McpLimits } from '../../config/mcp-schema.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { AdmissionLimit, AdmissionStore, LimitOutcome } from '../../store/store-contract.js';
import { isStoreOutage } from '../../store/store-outage.js';
import { rateLimitHeaders, rateStateOf, type AppliedLimit } from '../limits/rate-limit-headers.js';
import type { AdmittedCall, ToolCallLimiter, ToolCallAdmission } from './tool-service.js';

const MINUTE_MS = 60_000;
/**
 * Added to a call's longest possible hold (connect + call timeout) for the lease of its concurrency slots in the
 * store: a slot outlives its call only when the process died holding it, and then lapses by itself.
 */
const SLOT_LEASE_MARGIN_MS = 10_000;

export interface StoreToolLimiterOptions {
  /** The gateway's limit store (SQLite, or Redis shared by every instance), usually behind LeasedLimits. */
  store: AdmissionStore;
  /** `limits.on_store_failure`: an unreachable store lets calls through (`open`) or refuses them (`closed`). */
  onStoreFailure: () => 'open' | 'closed';
  /** The store failed or answered again (health's `degraded`, the log). */
  onStoreHealth: (healthy: boolean, error?: unknown) => void;
  /** A slot's release that failed (logged: the slot lapses with its lease). */
  onReleaseError: (error: unknown) => void;
  /** Added to a call's longest hold for its slots' lease (default 10 s; tests shorten it). */
  slotLeaseMarginMs?: number;
}

/** One limit of one call: what it is for the 429's details and the RateLimit-Policy comment. */
interface Described {
  scope: 'caller' | 'server';
  id: string;
  what: 'calls_per_minute' | 'concurrent';
}

const NO_LIMIT: AdmittedCall = { rate: undefined, release: () => undefined };

/**
 * The MCP tool-call limits (docs/mcp.md, "Limits") in the gateway's limit store, the one the model calls' limits
 * use: calls a minute (GCRA, the store's `rate` items) and calls in flight (`concurrency` items, each slot a lease
 * in the store that lapses by itself if the process holding it dies), per caller and per server, all taken in one
 * atomic step or none. With Redis every instance counts against the same limits.
 */
export class StoreToolLimiter implements ToolCallLimiter {
  constructor(private readonly options: StoreToolLimiterOptions) {}

  async admit(call: ToolCallAdmission): Promise<AdmittedCall> {
    const leaseMs = call.holdMs + (this.options.slotLeaseMarginMs ?? SLOT_LEASE_MARGIN_MS);
    const items: AdmissionLimit[] = [];
    const described: Described[] = [];
    const add = (scope: Described['scope'], id: string, limits: McpLimits | undefined) => {
      if (limits?.callsPerMinute !== undefined) {
        items.push({
          kind: 'rate',
          key: `mcp_calls:${scope}:${id}`,
          limit: limits.callsPerMinute,
          windowMs: MINUTE_MS,
          cost: 1,
        });
        described.push({ scope, id, what: 'calls_per_minute' });
      }
      if (limits?.concurrent !== undefined) {
        items.push({ kind: 'concurrency', key: `mcp_concurrent:${scope}:${id}`, max: limits.concurrent, leaseMs });
        described.push({ scope, id, what: 'concurrent' });
      }
    };
    add('caller', call.caller, call.callerLimits);
    add('server', call.server, call.serverLimits);
    if (items.length === 0) return NO_LIMIT;
    const token = `mcp_${randomUUID()}`;
    let outcomes: LimitOutcome[];
    try {
      const result = await this.options.store.admit(items, token);
      this.options.onStoreHealth(true);
      outcomes = result.outcomes;
      if (!result.admitted) throw refusal(items, outcomes, described);
    } catch (error) {
      if (!isStoreOutage(error)) throw error;
      this.options.onStoreHealth(false, error);
      if (this.options.onStoreFailure() === 'closed')
        throw new GatewayError('rate_limit_store_unavailable', { policy: 'closed' }, { cause: error });
      return NO_LIMIT; // fail open, as the model calls' limits do: health says degraded
    }
    const slots = items.flatMap((item) => (item.kind === 'concurrency' ? [{ kind: item.kind, key: item.key }] : []));
    let released = false;
    return {
      rate: rateStateOf(applied(items, outcomes, described)),
      release: () => {
        if (released || slots.length === 0) return;
        released = true;
        this.options.store.settle(slots, token).catch(this.options.onReleaseError);
      },
    };
  }
}

/** The windowed limits that applied, with the store's decisions (RateLimit-* name the binding one). */
function applied(items: AdmissionLimit[], outcomes: LimitOutcome[], described: Described[]): AppliedLimit[] {
  const limits: AppliedLimit[] = [];
  items.forEach((item, i) => {
    const outcome = outcomes[i];
    const about = described[i];
    if (item.kind === 'rate' && outcome?.kind === 'rate' && about)
      limits.push({ name: `mcp.${about.scope}.${about.what}`, windowMs: item.windowMs, decision: outcome.decision });
  });
  return limits;
}

/**
 * The 429 of a refused call: details name the first limit that refused (`mcp.caller.calls_per_minute`,
 * `mcp.server.concurrent`…), with its scope, its maximum and the wait; the headers describe the binding window.
 */
function refusal(items: AdmissionLimit[], outcomes: LimitOutcome[], described: Described[]): GatewayError {
  const index = outcomes.findIndex((o) => (o.kind === 'rate' ? !o.decision.allowed : !o.acquired));
  const outcome = outcomes[index];
  const item = items[index];
  const about = described[index];
  const limits = applied(items, outcomes, described);
  if (!outcome || !item || !about) return new GatewayError('rate_limited', {}, { headers: rateLimitHeaders(limits) });
  // A slot frees when a call ends, usually within a second; a window's wait is what the store computed.
  const waitMs = outcome.kind === 'rate' ? outcome.decision.retryAfterMs : 1_000;
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new GatewayError(
    'rate_limited',
    {
      limit: `mcp.${about.scope}.${about.what}`,
      scope: about.scope,
      scope_id: about.id,
      max: item.kind === 'rate' ? item.limit : item.max,
      ...(outcome.kind === 'concurrency' ? { in_flight: outcome.inFlight } : { window_seconds: 60 }),
      retry_after_seconds: seconds,
    },
    { headers: { ...rateLimitHeaders(limits), 'retry-after': String(seconds) } },
  );
}
