import { randomUUID } from 'node:crypto';
import type {
  AdmissionLimit,
  AdmissionResult,
  AdmissionSettlement,
  AdmissionStore,
  LimitOutcome,
  RateLimitDecision,
} from '../../store/store-contract.js';

type RateLimit = Extract<AdmissionLimit, { kind: 'rate' }>;
type SlotLimit = Extract<AdmissionLimit, { kind: 'concurrency' }>;

export interface LeasedLimitsOptions {
  store: AdmissionStore;
  /** How much of a rate limit an instance prepays at once, as time at the limit's full rate. */
  chunkMs?: number;
  /** Prepaid units and spare slots unused for this long go back to the shared store. */
  idleReturnMs?: number;
  /** Lease of a block slot in the store; renewed every third of it while held. */
  slotLeaseMs?: number;
  onStoreError: (error: unknown) => void;
  now?: () => number;
}

/** Below this many units per chunk a rate limit is decided in the store for every request (exact). */
const MIN_CHUNK_UNITS = 2;
/** Concurrency limits below this are decided in the store per request; above, blocks of max/20 slots. */
const MIN_BLOCK_MAX = 20;
const BLOCK_FRACTION = 20;

interface RateLease {
  /** Units bought from the shared store and not used yet (negative: used beyond what was bought, owed). */
  available: number;
  limit: number;
  windowMs: number;
  lastUsed: number;
  /** The store's decision when units were last bought, for the RateLimit-* headers. */
  base: RateLimitDecision;
  baseAt: number;
  /** Admissions in progress that planned with this lease: it is not returned to the store while any is. */
  pins: number;
}

interface SlotBlock {
  /** Store tokens of the slots this instance holds. */
  tokens: string[];
  inUse: number;
  max: number;
  lastUsed: number;
  /** Admissions in progress that planned with this block: it is not returned to the store while any is. */
  pins: number;
}

/**
 * One limit's part of an admission. A local step is taken when it is planned (its units or its slot set aside in
 * `lease` / `block`), and every lease or block a plan uses is pinned until the admission ends: an admission that
 * waits for the store can rely on what it planned with. (Planning without setting aside let the idle sweep return
 * a lease, or another request take its units, while the store step was in flight: "a local rate step without a
 * lease", or more admitted than bought.)
 */
type Step =
  | { how: 'store' }
  | { how: 'local-rate'; limit: RateLimit; lease: RateLease }
  /** `reserved`: units this instance held, set aside for this request while it buys the rest. */
  | { how: 'buy-rate'; limit: RateLimit; reserved: number; lease: RateLease | undefined }
  | { how: 'local-slot'; limit: SlotLimit; block: SlotBlock }
  | { how: 'buy-slots'; limit: SlotLimit; block: SlotBlock | undefined };

interface StoreRequest {
  items: AdmissionLimit[];
  /** `at[i]`: the indexes of step i's items in `items`. */
  at: number[][];
  /** Whether more than the request needs was asked for (a chunk, a block). */
  bought: boolean;
}

/**
 * Quota leasing in front of the shared limit store, so that a limit far above one request's worth does not cost a
 * store round trip per request. For a rate limit of L per window W, an instance buys about `chunkMs` of the full
 * rate at once (L * chunkMs / W units) with one atomic store step, and admits from that locally; for a
 * concurrency limit of max M, it holds a block of M/20 slots (one store token each). What an instance bought is
 * taken from the shared budget before it is used, so N instances never admit more than the limit in total; what
 * an instance holds but does not use goes back after `idleReturnMs`, so the cost of leasing is that another
 * instance may be refused for at most about a chunk (50 ms of the rate, 5 % of the slots) per instance, briefly.
 * Small limits (fewer than 2 units per chunk, fewer than 20 slots) bypass leasing and stay exact per request; a
 * limit that may be overdrawn (`need` below `cost`) is served from a lease when it covers the whole cost, else
 * decided by the store.
 *
 * RateLimit-Remaining from a leased limit is this instance's estimate: the shared remainder when it last bought
 * units, plus what it still holds.
 */
export class LeasedLimits implements AdmissionStore {
  private readonly store: AdmissionStore;
  private readonly chunkMs: number;
  private readonly idleReturnMs: number;
  private readonly slotLeaseMs: number;
  private readonly now: () => number;
  private readonly instance = randomUUID();
  private readonly rates = new Map<string, RateLease>();
  private readonly blocks = new Map<string, SlotBlock>();
  /** Purchases in flight, by purchase key (`rate:<key>` / `slots:<key>`). */
  private readonly purchases = new Map<string, Promise<void>>();
  private tokenSeq = 0;
  private sweeper: NodeJS.Timeout | undefined;
  private renewer: NodeJS.Timeout | undefined;

  constructor(private readonly options: LeasedLimitsOptions) {
    this.store = options.store;
    this.chunkMs = options.chunkMs ?? 50;
    this.idleReturnMs = options.idleReturnMs ?? 100;
    this.slotLeaseMs = options.slotLeaseMs ?? 30_000;
    this.now = options.now ?? Date.now;
  }

  async admit(limits: readonly AdmissionLimit[], token: string): Promise<AdmissionResult> {
    // One purchase per key at a time: a request that would buy what another is already buying waits for it and
    // then looks again (usually served locally from that purchase), so a burst does not buy a chunk per request.
    const now = this.now();
    const local = this.tryLocal(limits, now);
    if (local) return local;
    for (let wait = this.purchaseToWaitFor(limits); wait; wait = this.purchaseToWaitFor(limits)) await wait;
    const planned = this.now();
    const plan = limits.map((limit) => this.planStep(limit, planned));
    if (plan.every((step) => step.how === 'local-rate' || step.how === 'local-slot')) {
      const outcomes = plan.map((step) => this.localOutcome(step, planned));
      unpin(plan);
      return { admitted: true, outcomes };
    }
    const buying = plan.flatMap((step) =>
      step.how === 'buy-rate' || step.how === 'buy-slots' ? [purchaseKey(step.limit)] : [],
    );
    let done = () => {};
    const purchase = new Promise<void>((resolve) => (done = resolve));
    for (const key of buying) this.purchases.set(key, purchase);
    try {
      return await this.admitThroughStore(limits, plan, token, now);
    } finally {
      unpin(plan);
      for (const key of buying) if (this.purchases.get(key) === purchase) this.purchases.delete(key);
      done();
    }
  }

  /** The common case under load: everything is held here. Takes it all, or returns undefined and takes nothing. */
  private tryLocal(limits: readonly AdmissionLimit[], now: number): AdmissionResult | undefined {
    for (const limit of limits) {
      if (limit.kind === 'rate') {
        const lease = this.rates.get(limit.key);
        if (!lease || lease.available < limit.cost) return undefined;
      } else {
        const block = this.blocks.get(limit.key);
        if (!block || block.inUse >= block.tokens.length || limit.max < MIN_BLOCK_MAX) return undefined;
      }
    }
    // Checked above, taken here in the same turn: nothing can come between.
    const outcomes: LimitOutcome[] = [];
    for (const limit of limits) {
      if (limit.kind === 'rate') {
        const lease = this.rates.get(limit.key) as RateLease;
        lease.available -= limit.cost;
        lease.lastUsed = now;
        outcomes.push({ kind: 'rate', decision: estimate(lease, now) });
      } else {
        const block = this.blocks.get(limit.key) as SlotBlock;
        block.inUse++;
        block.lastUsed = now;
        outcomes.push({ kind: 'concurrency', acquired: true, inFlight: block.inUse });
      }
    }
    return { admitted: true, outcomes };
  }

  /** A purchase in flight for a key this request cannot serve locally, if any. */
  private purchaseToWaitFor(limits: readonly AdmissionLimit[]): Promise<void> | undefined {
    if (this.purchases.size === 0) return undefined;
    for (const limit of limits) {
      const pending = this.purchases.get(purchaseKey(limit));
      if (!pending) continue;
      if (limit.kind === 'rate' && (this.rates.get(limit.key)?.available ?? 0) < limit.cost) return pending;
      if (limit.kind === 'concurrency') {
        const block = this.blocks.get(limit.key);
        if (!block || block.inUse >= block.tokens.length) return pending;
      }
    }
    return undefined;
  }

  private async admitThroughStore(
    limits: readonly AdmissionLimit[],
    plan: Step[],
    token: string,
    now: number,
  ): Promise<AdmissionResult> {
    try {
      let asked = this.storeRequest(limits, plan, true);
      let result = await this.store.admit(asked.items, token, now);
      if (!result.admitted && asked.bought) {
        // A whole chunk may not fit where the request alone does: ask for exactly what this request needs.
        asked = this.storeRequest(limits, plan, false);
        result = await this.store.admit(asked.items, token, now);
      }
      if (!result.admitted) {
        const outcomes = plan.map((step, i) => this.outcomeOfRefusal(step, asked.at[i] ?? [], result.outcomes, now));
        this.unreserve(plan); // last: nothing after it can throw and give back twice
        return { admitted: false, outcomes };
      }
      const outcomes = plan.map((step, i) => this.apply(step, asked, i, result.outcomes, now));
      this.startTimers();
      return { admitted: true, outcomes };
    } catch (error) {
      this.unreserve(plan);
      throw error;
    }
  }

  async settle(items: readonly AdmissionSettlement[], token: string): Promise<void> {
    const now = this.now();
    const forStore: AdmissionSettlement[] = [];
    for (const item of items) {
      if (item.kind === 'concurrency') {
        // A key has a block only when its limit is leased (max >= 20), and then every slot came from the block;
        // a block is never dropped while a slot of it is in use.
        const block = this.blocks.get(item.key);
        if (block) {
          block.inUse = Math.max(0, block.inUse - 1);
          block.lastUsed = now;
        } else {
          forStore.push(item);
        }
        continue;
      }
      const lease = this.rates.get(item.key);
      if (!lease) {
        forStore.push(item);
        continue;
      }
      // A correction stays local: units given back can be used again here, extra usage is taken from what is held.
      lease.available -= item.delta;
      lease.lastUsed = now;
      if (lease.available < 0) {
        forStore.push({
          kind: 'rate',
          key: item.key,
          limit: lease.limit,
          windowMs: lease.windowMs,
          delta: -lease.available,
        });
        lease.available = 0;
      }
    }
    if (forStore.length > 0) await this.store.settle(forStore, token, now);
  }

  /** Gives every held unit and slot back to the store and stops the timers (at shutdown). */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    clearInterval(this.renewer);
    this.sweeper = undefined;
    this.renewer = undefined;
    await this.returnIdle(0);
  }

  /** One limit's step, its local part set aside at once and its lease or block pinned (see Step). */
  private planStep(limit: AdmissionLimit, now: number): Step {
    if (limit.kind === 'rate') {
      if (chunkUnits(limit, this.chunkMs) < MIN_CHUNK_UNITS) return { how: 'store' };
      const lease = this.rates.get(limit.key);
      if (lease && lease.available >= limit.cost) {
        lease.available -= limit.cost;
        lease.lastUsed = now;
        lease.pins++;
        return { how: 'local-rate', limit, lease };
      }
      // A limit that may be overdrawn (`need` below `cost`) and is not covered here is decided by the shared store
      // on what is left there, which a purchase of whole units cannot express.
      if (limit.need !== undefined) return { how: 'store' };
      const reserved = Math.max(0, lease?.available ?? 0);
      if (lease) {
        lease.available -= reserved;
        lease.pins++;
      }
      return { how: 'buy-rate', limit, reserved, lease };
    }
    if (limit.max < MIN_BLOCK_MAX) return { how: 'store' };
    const block = this.blocks.get(limit.key);
    if (block && block.inUse < block.tokens.length) {
      block.inUse++;
      block.lastUsed = now;
      block.pins++;
      return { how: 'local-slot', limit, block };
    }
    if (block) block.pins++;
    return { how: 'buy-slots', limit, block };
  }

  /** A refused or failed admission gives back what its plan had set aside: held units, a held slot. */
  private unreserve(plan: Step[]): void {
    for (const step of plan) {
      if (step.how === 'local-rate') step.lease.available += step.limit.cost;
      else if (step.how === 'local-slot') step.block.inUse = Math.max(0, step.block.inUse - 1);
      else if (step.how === 'buy-rate' && step.lease) {
        step.lease.available += step.reserved;
        step.reserved = 0;
      }
    }
  }

  /** The store items of a plan: exact items as they are, a chunk (or the exact need) for units, slot blocks. */
  private storeRequest(limits: readonly AdmissionLimit[], plan: Step[], withChunk: boolean): StoreRequest {
    const items: AdmissionLimit[] = [];
    const at: number[][] = [];
    let bought = false;
    plan.forEach((step, i) => {
      const limit = limits[i];
      const indexes: number[] = [];
      at.push(indexes);
      if (!limit || step.how === 'local-rate' || step.how === 'local-slot') return;
      if (step.how === 'store') {
        indexes.push(items.length);
        items.push(limit);
      } else if (step.how === 'buy-rate') {
        const need = step.limit.cost - step.reserved;
        const extra = withChunk
          ? Math.max(0, Math.min(chunkUnits(step.limit, this.chunkMs), step.limit.limit - need))
          : 0;
        bought ||= extra > 0;
        indexes.push(items.length);
        items.push({ ...step.limit, cost: need + extra });
      } else {
        const count = withChunk ? Math.max(1, Math.floor(step.limit.max / BLOCK_FRACTION)) : 1;
        bought ||= count > 1;
        for (let n = 0; n < count; n++) {
          indexes.push(items.length);
          items.push({
            kind: 'concurrency',
            key: step.limit.key,
            max: step.limit.max,
            leaseMs: this.slotLeaseMs,
            token: this.slotToken(),
          });
        }
      }
    });
    return { items, at, bought };
  }

  /** The outcome of a local step, taken when it was planned (its lease or block pinned since). */
  private localOutcome(step: Step, now: number): LimitOutcome {
    if (step.how === 'local-rate') return { kind: 'rate', decision: estimate(step.lease, now) };
    if (step.how === 'local-slot') return { kind: 'concurrency', acquired: true, inFlight: step.block.inUse };
    throw new Error(`not a local step: ${step.how}`);
  }

  private apply(step: Step, asked: StoreRequest, i: number, outcomes: LimitOutcome[], now: number): LimitOutcome {
    if (step.how === 'local-rate' || step.how === 'local-slot') return this.localOutcome(step, now);
    const at = asked.at[i] ?? [];
    const first = outcomes[at[0] ?? -1];
    if (!first) throw new Error('the store answered fewer outcomes than items asked');
    if (step.how === 'store') return first;
    if (step.how === 'buy-rate') {
      if (first.kind !== 'rate') throw new Error('a rate item answered as another kind');
      const { limit } = step;
      const bought = asked.items[at[0] ?? -1];
      const units = bought?.kind === 'rate' ? bought.cost : limit.cost - step.reserved;
      // The lease planned with (pinned, so still this key's), else the one a purchase made meanwhile, else a new one.
      let lease = step.lease ?? this.rates.get(limit.key);
      if (!lease) {
        lease = {
          available: 0,
          limit: limit.limit,
          windowMs: limit.windowMs,
          lastUsed: now,
          base: first.decision,
          baseAt: now,
          pins: 0,
        };
        this.rates.set(limit.key, lease);
      }
      // Reserved + bought units pay for this request; the rest is held for the next ones.
      lease.available += step.reserved + units - limit.cost;
      step.reserved = 0;
      Object.assign(lease, {
        limit: limit.limit,
        windowMs: limit.windowMs,
        base: first.decision,
        baseAt: now,
        lastUsed: now,
      });
      return { kind: 'rate', decision: estimate(lease, now) };
    }
    let block = step.block ?? this.blocks.get(step.limit.key);
    if (!block) {
      block = { tokens: [], inUse: 0, max: step.limit.max, lastUsed: now, pins: 0 };
      this.blocks.set(step.limit.key, block);
    }
    for (const index of at) {
      const item = asked.items[index];
      if (item?.kind === 'concurrency' && item.token) block.tokens.push(item.token);
    }
    block.max = step.limit.max;
    block.inUse++;
    block.lastUsed = now;
    return { kind: 'concurrency', acquired: true, inFlight: block.inUse };
  }

  private outcomeOfRefusal(step: Step, at: number[], outcomes: LimitOutcome[], now: number): LimitOutcome {
    if (step.how === 'local-rate') return { kind: 'rate', decision: estimate(step.lease, now) };
    if (step.how === 'local-slot') return { kind: 'concurrency', acquired: true, inFlight: step.block.inUse };
    // Several items (a block of slots): the refusing one speaks for the step.
    const answered = at.map((i) => outcomes[i]).filter((o): o is LimitOutcome => o !== undefined);
    const refusing = answered.find((o) => (o.kind === 'rate' ? !o.decision.allowed : !o.acquired));
    const outcome = refusing ?? answered[0];
    if (!outcome) throw new Error('the store answered fewer outcomes than items asked');
    return outcome;
  }

  private slotToken(): string {
    this.tokenSeq += 1;
    return `${this.instance}:${this.tokenSeq}`;
  }

  private startTimers(): void {
    if (!this.sweeper) {
      this.sweeper = setInterval(() => void this.returnIdle(this.idleReturnMs), this.idleReturnMs);
      this.sweeper.unref();
    }
    if (!this.renewer && this.blocks.size > 0) {
      this.renewer = setInterval(() => void this.renewBlocks(), Math.max(50, Math.floor(this.slotLeaseMs / 3)));
      this.renewer.unref();
    }
  }

  /** Units and spare slots unused for `idleMs` (0: all of them) go back to the store; the entries are forgotten. */
  private async returnIdle(idleMs: number): Promise<void> {
    const now = this.now();
    const items: AdmissionSettlement[] = [];
    for (const [key, lease] of this.rates) {
      // A pinned lease is part of an admission in progress: returned once it is over and idle.
      if (lease.pins > 0 || now - lease.lastUsed < idleMs) continue;
      if (lease.available !== 0)
        items.push({ kind: 'rate', key, limit: lease.limit, windowMs: lease.windowMs, delta: -lease.available });
      this.rates.delete(key);
    }
    for (const [key, block] of this.blocks) {
      if (block.pins > 0 || now - block.lastUsed < idleMs) continue;
      while (block.tokens.length > block.inUse) {
        const token = block.tokens.pop();
        if (token) items.push({ kind: 'concurrency', key, token });
      }
      if (block.tokens.length === 0 && block.inUse === 0) this.blocks.delete(key);
    }
    if (items.length === 0) return;
    await this.store.settle(items, this.instance, now).catch(this.options.onStoreError);
  }

  /** Keeps the store leases of held slots alive (a crashed instance stops renewing; its slots lapse). */
  private async renewBlocks(): Promise<void> {
    const now = this.now();
    for (const [key, block] of this.blocks) {
      if (block.tokens.length === 0) continue;
      const items: AdmissionLimit[] = block.tokens.map((token) => ({
        kind: 'concurrency',
        key,
        max: block.max,
        leaseMs: this.slotLeaseMs,
        token,
      }));
      await this.store.admit(items, this.instance, now).catch(this.options.onStoreError);
    }
  }
}

/** Ends a plan's pins (see Step). */
function unpin(plan: readonly Step[]): void {
  for (const step of plan) {
    if (step.how === 'local-rate') step.lease.pins--;
    else if (step.how === 'local-slot') step.block.pins--;
    else if (step.how === 'buy-rate' && step.lease) step.lease.pins--;
    else if (step.how === 'buy-slots' && step.block) step.block.pins--;
  }
}

function purchaseKey(limit: AdmissionLimit): string {
  return `${limit.kind}:${limit.key}`;
}

/** Units of a rate limit bought at once: `chunkMs` at the full rate. */
function chunkUnits(limit: RateLimit, chunkMs: number): number {
  return Math.floor((limit.limit * chunkMs) / limit.windowMs);
}

/** This instance's view of a leased limit: the shared remainder when units were bought, plus what it holds. */
function estimate(lease: RateLease, now: number): RateLimitDecision {
  const remaining = Math.max(0, Math.min(lease.limit, Math.floor(lease.base.remaining + Math.max(0, lease.available))));
  return {
    allowed: true,
    limit: lease.limit,
    remaining,
    resetMs: Math.max(0, lease.base.resetMs - (now - lease.baseAt)),
    retryAfterMs: 0,
  };
}
