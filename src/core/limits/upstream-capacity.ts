import type { UpstreamConfig } from '../../config/types.js';
import { GatewayError } from '../../errors/gateway-error.js';

/** What a caller told to wait is told to come back after: a slot frees whenever any call ends, which is soon. */
const BUSY_RETRY_AFTER_SECONDS = 1;

export interface CapacitySettings {
  /** Calls in flight at once on this upstream, per process; undefined: no bound (as many as the machine holds). */
  bound: number | undefined;
  /** How long a call waits for a slot when the bound is reached before it is refused with `upstream_busy`. */
  queueTimeoutMs: number;
}

export interface CapacityLoad {
  inFlight: number;
  queued: number;
  bound: number | undefined;
}

/** A call waiting for a slot: settled exactly once, by a freed slot, its timeout or its caller leaving. */
interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
  settled: boolean;
}

/**
 * One upstream's concurrency in this process: how many calls are in flight, and — only when a bound is
 * configured — a short, time-limited FIFO of calls waiting for a slot. Without a bound it is two counter updates
 * per call. With one, a call that finds every slot taken waits at most `queueTimeoutMs` and is then refused with
 * 503 `upstream_busy` (and Retry-After): never a silent queue, never a timeout that blames the provider. The wait
 * happens before the upstream request exists, so it never counts against the first-byte timeout.
 */
export class UpstreamCapacity {
  private inFlight = 0;
  private readonly waiting: Waiter[] = [];
  /** Index of the oldest waiter still in `waiting` (a ring-free queue: shifted lazily, compacted when drained). */
  private head = 0;
  private queued = 0;

  constructor(
    readonly upstream: string,
    private settings: CapacitySettings,
  ) {}

  /**
   * New bounds from a config reload; the calls in flight stay counted. A raised bound lets waiters in at once; a
   * lowered one takes effect as calls end (none is cut off).
   */
  reconfigure(settings: CapacitySettings): void {
    this.settings = settings;
    while (this.queued > 0 && (settings.bound === undefined || this.inFlight < settings.bound)) {
      this.inFlight += 1;
      this.release();
    }
  }

  /** Takes a slot when one is free (always, without a bound). The caller must `release()` it exactly once. */
  tryAcquire(): boolean {
    const bound = this.settings.bound;
    if (bound !== undefined && (this.inFlight >= bound || this.queued > 0)) return false;
    this.inFlight += 1;
    return true;
  }

  /**
   * Waits for a slot (after `tryAcquire` said no). Resolves holding one; rejects with `upstream_busy` after
   * `queueTimeoutMs`, or with the signal's reason when the call is cancelled (its caller left, its deadline).
   */
  wait(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const timeoutMs = this.settings.queueTimeoutMs;
    if (timeoutMs <= 0) return Promise.reject(this.busy(0));
    return new Promise<void>((resolve, reject) => {
      const started = performance.now();
      const waiter: Waiter = {
        settled: false,
        resolve: () => {
          finish();
          resolve();
        },
        reject: (error) => {
          finish();
          reject(error);
        },
      };
      const onAbort = () => this.giveUp(waiter, () => signal.reason as unknown);
      const timer = setTimeout(
        () => this.giveUp(waiter, () => this.busy(Math.round(performance.now() - started))),
        timeoutMs,
      );
      const finish = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
      this.queued += 1;
    });
  }

  /** Frees a slot: handed straight to the oldest waiter (the count in flight stays), or returned. */
  release(): void {
    while (this.head < this.waiting.length) {
      const next = this.waiting[this.head] as Waiter;
      this.waiting[this.head++] = undefined as unknown as Waiter;
      this.compact();
      if (next.settled) continue;
      next.settled = true;
      this.queued -= 1;
      next.resolve();
      return;
    }
    this.inFlight -= 1;
  }

  load(): CapacityLoad {
    return { inFlight: this.inFlight, queued: this.queued, bound: this.settings.bound };
  }

  /** `error` is made after the waiter left the queue, so its details count the others only. */
  private giveUp(waiter: Waiter, error: () => unknown): void {
    if (waiter.settled) return;
    waiter.settled = true;
    this.queued -= 1;
    waiter.reject(error());
    // Given-up waiters stay in the queue until a release skips them; while no slot frees, arrivals that time out
    // would pile up there, so they are swept once they outnumber the live ones.
    if (this.waiting.length - this.head > 2 * this.queued + 64) {
      const live = this.waiting.slice(this.head).filter((w) => !w.settled);
      this.waiting.length = 0;
      this.waiting.push(...live);
      this.head = 0;
    }
  }

  /** Drops the consumed front of the queue once it is empty, so the array does not grow with every wait. */
  private compact(): void {
    if (this.head === this.waiting.length) {
      this.waiting.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
  }

  private busy(waitedMs: number): GatewayError {
    return new GatewayError(
      'upstream_busy',
      {
        upstream: this.upstream,
        in_flight: this.inFlight,
        queued: this.queued,
        bound: this.settings.bound,
        waited_ms: waitedMs,
        queue_timeout_ms: this.settings.queueTimeoutMs,
      },
      { headers: { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) } },
    );
  }
}

/**
 * One try's place in its upstream's capacity: taken before the request exists, so time spent waiting never counts
 * against the first-byte timeout; given back exactly once, when a JSON answer has been read, when a stream ends,
 * or when the try fails.
 */
export class CapacitySlot {
  private held = false;

  constructor(private readonly capacity: UpstreamCapacity | undefined) {}

  /** Undefined when a slot was free (the common case, with no promise to await), else the wait for one. */
  take(signal: AbortSignal): Promise<void> | undefined {
    const capacity = this.capacity;
    if (!capacity) return undefined;
    if (capacity.tryAcquire()) {
      this.held = true;
      return undefined;
    }
    return capacity.wait(signal).then(() => {
      this.held = true;
    });
  }

  release(): void {
    if (!this.held) return;
    this.held = false;
    this.capacity?.release();
  }
}

/** Every upstream's capacity, by name; an upstream not configured (tests' own providers) has no bound. */
export class UpstreamCapacities {
  private readonly byUpstream = new Map<string, UpstreamCapacity>();

  constructor(settings: Iterable<[string, CapacitySettings]>) {
    for (const [upstream, s] of settings) this.byUpstream.set(upstream, new UpstreamCapacity(upstream, s));
  }

  of(upstream: string): UpstreamCapacity {
    let capacity = this.byUpstream.get(upstream);
    if (!capacity) {
      capacity = new UpstreamCapacity(upstream, { bound: undefined, queueTimeoutMs: 0 });
      this.byUpstream.set(upstream, capacity);
    }
    return capacity;
  }

  loads(): Array<[string, CapacityLoad]> {
    return [...this.byUpstream].map(([name, c]) => [name, c.load()]);
  }

  /**
   * A config reload: upstreams still configured keep their count of calls in flight (under their new bounds), new
   * ones start at zero, removed ones are forgotten (their calls still running give their slots back to the object
   * they took them from, which nothing else uses any more).
   */
  update(upstreams: ReadonlyArray<UpstreamConfig>): void {
    const settings = new Map(upstreams.map((u) => [u.name, settingsOf(u)]));
    for (const name of [...this.byUpstream.keys()]) if (!settings.has(name)) this.byUpstream.delete(name);
    for (const [name, s] of settings) {
      const capacity = this.byUpstream.get(name);
      if (capacity) capacity.reconfigure(s);
      else this.byUpstream.set(name, new UpstreamCapacity(name, s));
    }
  }
}

/**
 * The bound on an upstream's calls in flight: `max_concurrent`, or `max_connections` (one call holds one
 * connection), the lower of the two when both are set; undefined when neither is.
 */
export function callBound(upstream: Pick<UpstreamConfig, 'maxConcurrent' | 'maxConnections'>): number | undefined {
  const { maxConcurrent, maxConnections } = upstream;
  if (maxConcurrent === undefined) return maxConnections;
  return maxConnections === undefined ? maxConcurrent : Math.min(maxConcurrent, maxConnections);
}

/** Every configured upstream's capacity settings. */
export function capacitiesOf(upstreams: ReadonlyArray<UpstreamConfig>): UpstreamCapacities {
  return new UpstreamCapacities(upstreams.map((u) => [u.name, settingsOf(u)]));
}

function settingsOf(upstream: UpstreamConfig): CapacitySettings {
  return { bound: callBound(upstream), queueTimeoutMs: upstream.queueTimeoutMs };
}
