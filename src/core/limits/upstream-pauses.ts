import { GatewayError } from '../../errors/gateway-error.js';
import type { UpstreamPauseStore } from '../../store/store-contract.js';
import { parsePauseScope, type PauseKeyKind } from './pause-scope.js';

export interface UpstreamPausesOptions {
  store: UpstreamPauseStore;
  /** The longest pause one 429 may impose (a Retry-After of a day is not obeyed for a day); 0 disables pauses. */
  maxPauseMs: number;
  /** How stale this instance's view of pauses recorded by other instances may be. */
  refreshMs?: number;
  onStoreError: (error: unknown) => void;
  now?: () => number;
}

/** The cap on a passed-on Retry-After when pauses are off: the pause cap's own default. */
const DEFAULT_RETRY_AFTER_CAP_MS = 60_000;
/** Scopes remembered locally before the maps are cleared (caller-supplied keys make scopes per key). */
const MAX_SCOPES = 10_000;
/** Pauses listed for health and metrics at most (each one is a 429 an upstream really sent). */
const MAX_LISTED = 100;

/** The pauses of one (upstream, upstream model, kind of key), as health and metrics show them. */
export interface ActivePause {
  upstream: string;
  upstreamModel: string;
  key: PauseKeyKind;
  /** How many keys of that kind are paused (always 1 for the configured key; callers' own keys may be several). */
  keys: number;
  /** The latest end among them, epoch ms. */
  untilMs: number;
}

/**
 * "This upstream asked for quiet": after an upstream answers 429 with Retry-After for a model, every call of that
 * upstream model (with the same key) gets a 429 from the gateway until the pause ends, without the request
 * reaching the upstream; its other models are not held. Scopes are named by `pauseScopeName`.
 *
 * The check is on the hot path, so it mostly answers from this instance's memory, which it refreshes from the
 * shared store at most once per `refreshMs` (a second) per scope. The instance that saw the 429 pauses at once;
 * the others within `refreshMs`. A store failure only costs the sharing: each instance still pauses on the 429s
 * it sees itself.
 */
export class UpstreamPauses {
  private readonly until = new Map<string, number>();
  private readonly lastRead = new Map<string, number>();
  private readonly reads = new Map<string, Promise<void>>();
  private listing: { at: number; pauses: Promise<ActivePause[]> } | undefined;
  private readonly refreshMs: number;
  private readonly now: () => number;

  constructor(private readonly options: UpstreamPausesOptions) {
    this.refreshMs = options.refreshMs ?? 1_000;
    this.now = options.now ?? Date.now;
  }

  get enabled(): boolean {
    return this.options.maxPauseMs > 0;
  }

  /**
   * Throws (or rejects with) 429 `upstream_rate_limited` while `scope` is paused. Answers from memory, with no
   * promise, while this instance read the shared store for `scope` less than `refreshMs` ago; otherwise reads it
   * first (one read per scope per `refreshMs`, shared by the requests that arrive meanwhile), so an instance that
   * had no traffic for a while still learns of a pause before its first call goes out.
   */
  check(scope: string): Promise<void> | undefined {
    if (!this.enabled) return undefined;
    const now = this.now();
    const last = this.lastRead.get(scope);
    if (last !== undefined && now - last < this.refreshMs) {
      this.throwIfPaused(scope, now);
      return undefined;
    }
    let reading = this.reads.get(scope);
    if (!reading) {
      reading = this.read(scope, now);
      this.reads.set(scope, reading);
    }
    return reading.then(() => this.throwIfPaused(scope, this.now()));
  }

  /**
   * An upstream's Retry-After as the gateway passes it on: whole seconds, at least 1, at most the pause cap (the
   * default cap, 60 s, when pauses are off), and 1 when the upstream sent none or nothing readable (`-1`, `abc`).
   * A caller never sees the provider's own spelling (`1.5`, a date in 2099, `99999999999`).
   */
  retryAfterSeconds(retryAfter: string | undefined): number {
    const capMs = this.enabled ? this.options.maxPauseMs : DEFAULT_RETRY_AFTER_CAP_MS;
    const waitMs = parseRetryAfter(retryAfter, this.now());
    if (waitMs === undefined || waitMs <= 0) return 1;
    return Math.max(1, Math.ceil(Math.min(waitMs, capMs) / 1000));
  }

  /**
   * After the upstream's 429: pauses `scope` for its Retry-After (capped) and resolves once the shared store has
   * it too (so the 429 reaches its caller only after every instance can see the pause). Resolves with the end.
   */
  async record(scope: string, retryAfter: string | undefined): Promise<number | undefined> {
    if (!this.enabled) return undefined;
    const now = this.now();
    const waitMs = parseRetryAfter(retryAfter, now);
    if (waitMs === undefined || waitMs <= 0) return undefined;
    const until = now + Math.min(waitMs, this.options.maxPauseMs);
    this.extend(scope, until);
    this.listing = undefined; // health shows this instance's own pause at once, other instances' within refreshMs
    await this.options.store.pause(scope, until, now).catch(this.options.onStoreError);
    return until;
  }

  /**
   * The pauses in force, for health and metrics: read from the shared store (so every instance shows the pauses
   * any instance recorded), plus this instance's own (which hold even while the store fails), grouped by
   * (upstream, upstream model, kind of key). One store read per `refreshMs`, shared by concurrent askers.
   */
  active(): Promise<ActivePause[]> {
    if (!this.enabled) return Promise.resolve([]);
    const now = this.now();
    if (this.listing && now - this.listing.at < this.refreshMs) return this.listing.pauses;
    const pauses = this.list(now);
    this.listing = { at: now, pauses };
    return pauses;
  }

  private async list(now: number): Promise<ActivePause[]> {
    const until = new Map<string, number>();
    for (const [scope, end] of this.until) if (end > now) until.set(scope, end);
    try {
      for (const { scope, untilMs } of await this.options.store.list(now, MAX_LISTED))
        until.set(scope, Math.max(untilMs, until.get(scope) ?? 0));
    } catch (error) {
      this.options.onStoreError(error); // this instance's own view still shows
    }
    const groups = new Map<string, ActivePause>();
    for (const [scope, end] of until) {
      const parsed = parsePauseScope(scope);
      if (!parsed) continue;
      const group = `${parsed.upstream} ${parsed.key} ${parsed.upstreamModel}`;
      const known = groups.get(group);
      if (known) {
        known.keys += 1;
        known.untilMs = Math.max(known.untilMs, end);
      } else if (groups.size < MAX_LISTED) {
        groups.set(group, { ...parsed, keys: 1, untilMs: end });
      }
    }
    return [...groups.values()];
  }

  private async read(scope: string, now: number): Promise<void> {
    try {
      const until = await this.options.store.pausedUntil(scope, now);
      if (until !== undefined) this.extend(scope, until);
    } catch (error) {
      this.options.onStoreError(error); // fail open: this instance's own view still applies
    } finally {
      if (this.lastRead.size >= MAX_SCOPES) this.lastRead.clear();
      this.lastRead.set(scope, now);
      this.reads.delete(scope);
    }
  }

  /**
   * Drops this instance's memory of an upstream's pauses (a config reload removed it, or pointed it at another
   * endpoint); entries in the shared store end on their own, within the pause cap.
   */
  forget(upstream: string): void {
    for (const map of [this.until, this.lastRead]) {
      for (const scope of [...map.keys()]) if (parsePauseScope(scope)?.upstream === upstream) map.delete(scope);
    }
    this.listing = undefined;
  }

  private throwIfPaused(scope: string, now: number): void {
    const until = this.until.get(scope);
    if (until === undefined) return;
    if (until <= now) {
      this.until.delete(scope);
      return;
    }
    const seconds = Math.max(1, Math.ceil((until - now) / 1000));
    const parsed = parsePauseScope(scope);
    const what = parsed
      ? { upstream: parsed.upstream, upstream_model: parsed.upstreamModel, key: parsed.key }
      : { scope };
    throw new GatewayError(
      'upstream_rate_limited',
      { ...what, paused: true, paused_until: new Date(until).toISOString(), retry_after_seconds: seconds },
      {
        headers: { 'retry-after': String(seconds) },
        message:
          'The upstream answered 429 with Retry-After for this model; the gateway holds its calls to that model until then.',
      },
    );
  }

  private extend(scope: string, until: number): void {
    if (this.until.size >= MAX_SCOPES) this.until.clear();
    if (until > (this.until.get(scope) ?? 0)) this.until.set(scope, until);
  }
}

/** Retry-After (RFC 9110 10.2.3): delay-seconds or an HTTP-date; milliseconds from `now`, undefined if unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Some providers send fractional seconds ("1.5"); accept them rather than ignore the request for quiet.
  if (/^\d+\.\d+$/.test(text)) return Math.ceil(Number(text) * 1000);
  if (!/[a-z]/i.test(text)) return undefined; // "-3", "1e3"...: neither form (Date.parse would take "-3" as a year)
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : date - now;
}
