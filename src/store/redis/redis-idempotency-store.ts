import type { IdempotencyBegin, IdempotencyClaim, IdempotencyStore, StoredResponse } from '../store-contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import type { RedisClient } from './connect.js';

/** The longest `retryAfterMs` hint for a call in progress; the same cap, and the same reasons, as the SQLite store. */
const RETRY_HINT_CAP_MS = 5_000;

/**
 * One hash per key: fingerprint, state ('in_progress' | 'completed'), lease (ms), expires (ms), response (JSON of
 * the StoredResponse). `expires` is kept as a field, not only as the key's PEXPIRE, because expiry is decided on
 * the caller's clock (`nowMs`) exactly as in SQLite; PEXPIRE (set to the same deadline) only makes Redis drop the
 * key by itself afterwards.
 *
 * A claim overwrites a free, expired, or crashed (lease over) key; otherwise the key's owner wins.
 */
const BEGIN_LUA = `
local row = redis.call('HMGET', KEYS[1], 'fingerprint', 'state', 'lease', 'expires', 'response')
local now = tonumber(ARGV[2])
local lease = tonumber(row[3])
local expires = tonumber(row[4])
if not row[1] or not expires or expires <= now or (row[2] == 'in_progress' and (not lease or lease <= now)) then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'fingerprint', ARGV[1], 'state', 'in_progress', 'lease', ARGV[3], 'expires', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return {'claimed'}
end
if row[1] ~= ARGV[1] then return {'mismatch'} end
if row[2] == 'in_progress' then return {'in_progress', math.max(1, math.min(tonumber(ARGV[5]), lease - now))} end
return {'completed', row[5]}
`;

/** Only the claimant's own in-progress row is completed (see `complete`). */
const COMPLETE_LUA = `
local row = redis.call('HMGET', KEYS[1], 'fingerprint', 'state')
if row[1] ~= ARGV[1] or row[2] ~= 'in_progress' then return 0 end
redis.call('HSET', KEYS[1], 'state', 'completed', 'response', ARGV[2], 'expires', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`;

const ABANDON_LUA = `
local row = redis.call('HMGET', KEYS[1], 'fingerprint', 'state')
if row[1] == ARGV[1] and row[2] == 'in_progress' then return redis.call('DEL', KEYS[1]) end
return 0
`;

/** Extends the lease of the claimant's own in-progress row (its heartbeat); ARGV fingerprint, lease end, now. */
const RENEW_LUA = `
local row = redis.call('HMGET', KEYS[1], 'fingerprint', 'state', 'expires')
if row[1] ~= ARGV[1] or row[2] ~= 'in_progress' then return 0 end
local leaseEnd = tonumber(ARGV[2])
local expires = math.max(tonumber(row[3]) or 0, leaseEnd)
redis.call('HSET', KEYS[1], 'lease', leaseEnd, 'expires', expires)
redis.call('PEXPIRE', KEYS[1], expires - tonumber(ARGV[3]))
return 1
`;

/** The scripts as ioredis client methods (`defineCommand`: EVALSHA, falling back to EVAL once per connection). */
interface IdempotencyCommands {
  gwIdempotencyBegin(
    key: string,
    fingerprint: string,
    now: string,
    leaseEnd: string,
    leaseMs: string,
    capMs: string,
  ): Promise<unknown>;
  gwIdempotencyComplete(
    key: string,
    fingerprint: string,
    response: string,
    expires: string,
    ttlMs: string,
  ): Promise<unknown>;
  gwIdempotencyAbandon(key: string, fingerprint: string): Promise<unknown>;
  gwIdempotencyRenew(key: string, fingerprint: string, leaseEnd: string, now: string): Promise<unknown>;
}

export interface RedisIdempotencyStoreOptions {
  /** Prepended to every key; default `gw:idem:`. Tests use a random one and delete their keys afterwards. */
  prefix?: string;
}

/**
 * Idempotency keys in Redis, shared by every gateway instance. Each operation is one Lua script, which Redis runs
 * atomically: of N concurrent callers in any number of processes, exactly one claims a free key. Times are on the
 * caller's clock (`nowMs`), so instances sharing Redis need synchronised clocks (NTP), as for the rate limits.
 */
export class RedisIdempotencyStore implements IdempotencyStore {
  private readonly commands: IdempotencyCommands;
  private readonly prefix: string;

  constructor(client: RedisClient, options: RedisIdempotencyStoreOptions = {}) {
    this.prefix = options.prefix ?? 'gw:idem:';
    // Names specific to this store: the rate limiter defines its own scripts on the same client.
    client.defineCommand('gwIdempotencyBegin', { numberOfKeys: 1, lua: BEGIN_LUA });
    client.defineCommand('gwIdempotencyComplete', { numberOfKeys: 1, lua: COMPLETE_LUA });
    client.defineCommand('gwIdempotencyAbandon', { numberOfKeys: 1, lua: ABANDON_LUA });
    client.defineCommand('gwIdempotencyRenew', { numberOfKeys: 1, lua: RENEW_LUA });
    this.commands = client as unknown as IdempotencyCommands;
  }

  /**
   * The Redis key of (scope, key). Each part is base64url-encoded (an alphabet without ':'), so the one ':' between
   * them is unambiguous: scope "a:b" + key "c" and scope "a" + key "b:c" are different keys.
   */
  redisKey(scope: string, key: string): string {
    return `${this.prefix}${Buffer.from(scope, 'utf8').toString('base64url')}:${Buffer.from(key, 'utf8').toString('base64url')}`;
  }

  async begin(
    scope: string,
    key: string,
    fingerprint: string,
    leaseMs: number,
    nowMs = Date.now(),
  ): Promise<IdempotencyBegin> {
    const now = wholeMs('nowMs', nowMs);
    const lease = durationMs('leaseMs', leaseMs);
    const reply = await this.commands.gwIdempotencyBegin(
      this.redisKey(scope, key),
      fingerprint,
      String(now),
      String(now + lease),
      String(lease),
      String(RETRY_HINT_CAP_MS),
    );
    return parseBegin(reply);
  }

  /**
   * Stores the answer only while the key is still this claimant's (same fingerprint, in progress). When the key is
   * gone (expired) or was taken over by a newer claimant after this one's lease ran out, the newer claimant owns
   * it: overwriting would replay an answer to a request it never saw, so nothing is written.
   */
  async complete(
    { scope, key, fingerprint }: IdempotencyClaim,
    response: StoredResponse,
    ttlMs: number,
    nowMs = Date.now(),
  ): Promise<void> {
    const ttl = durationMs('ttlMs', ttlMs);
    const expires = wholeMs('nowMs', nowMs) + ttl;
    await this.commands.gwIdempotencyComplete(
      this.redisKey(scope, key),
      fingerprint,
      JSON.stringify(response),
      String(expires),
      String(ttl),
    );
  }

  /** Frees a key whose call failed, so a retry runs again; never deletes a completed answer or another's claim. */
  async abandon(scope: string, key: string, fingerprint: string): Promise<void> {
    await this.commands.gwIdempotencyAbandon(this.redisKey(scope, key), fingerprint);
  }

  /** One script per claim; issued together they leave in one write (auto-pipelining). */
  async renew(claims: ReadonlyArray<IdempotencyClaim>, leaseMs: number, nowMs = Date.now()): Promise<void> {
    const now = wholeMs('nowMs', nowMs);
    const leaseEnd = String(now + durationMs('leaseMs', leaseMs));
    await Promise.all(
      claims.map((c) =>
        this.commands.gwIdempotencyRenew(this.redisKey(c.scope, c.key), c.fingerprint, leaseEnd, String(now)),
      ),
    );
  }
}

function parseBegin(reply: unknown): IdempotencyBegin {
  if (Array.isArray(reply)) {
    const [state, value] = reply as unknown[];
    if (state === 'claimed' || state === 'mismatch') return { state };
    if (state === 'in_progress' && typeof value === 'number') return { state, retryAfterMs: value };
    // Only `complete` writes the response field, from a StoredResponse.
    if (state === 'completed' && typeof value === 'string')
      return { state, response: JSON.parse(value) as StoredResponse };
  }
  throw new Error(`idempotency store: unexpected reply from Redis: ${JSON.stringify(reply)}`);
}
