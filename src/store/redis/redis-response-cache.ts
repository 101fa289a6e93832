import type { ResponseCacheStore, StoredResponse } from '../store-contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import type { RedisClient } from './connect.js';

/**
 * One put, atomically: the entry (a hash with PEXPIRE), its size in the sizes hash, its last use in the LRU sorted
 * set, the total in a counter. Then the oldest few index members whose entry Redis already expired are dropped
 * (so expired entries stop counting), and while the total is over the bound the least recently used entries are
 * evicted (at most 1,000 per put: a lowered bound is reached over several puts rather than in one long script).
 * A total below zero, or an index holding only the new entry, is recounted from the sizes (a counter that drifted
 * because Redis' own memory policy evicted a bookkeeping key). The entry keys share the index's hash tag, so every
 * key a script touches is in one cluster slot.
 *
 * KEYS: entry, lru, sizes, total. ARGV: member, status, kind, headers, body, bytes, stored, expires, ttl, now, max,
 * entry prefix.
 */
const PUT_LUA = `
local old = redis.call('HGET', KEYS[3], ARGV[1])
if old then redis.call('DECRBY', KEYS[4], old) end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'kind', ARGV[3], 'headers', ARGV[4], 'body', ARGV[5], 'stored', ARGV[7], 'expires', ARGV[8])
redis.call('PEXPIRE', KEYS[1], ARGV[9])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[10], ARGV[1])
local total = redis.call('INCRBY', KEYS[4], ARGV[6])
for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, 7)) do
  if m ~= ARGV[1] and redis.call('EXISTS', ARGV[12] .. m) == 0 then
    local size = tonumber(redis.call('HGET', KEYS[3], m) or '0')
    redis.call('ZREM', KEYS[2], m)
    redis.call('HDEL', KEYS[3], m)
    total = redis.call('DECRBY', KEYS[4], size)
  end
end
if total < 0 or redis.call('ZCARD', KEYS[2]) == 1 then
  -- The counter drifted (bookkeeping keys evicted by Redis' own memory policy, or deleted): recount from the sizes.
  total = 0
  for _, size in ipairs(redis.call('HVALS', KEYS[3])) do total = total + tonumber(size) end
  redis.call('SET', KEYS[4], total)
end
local evicted = 0
local max = tonumber(ARGV[11])
while total > max and evicted < 1000 do
  local victim = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not victim or victim == ARGV[1] then break end
  local size = tonumber(redis.call('HGET', KEYS[3], victim) or '0')
  redis.call('ZREM', KEYS[2], victim)
  redis.call('HDEL', KEYS[3], victim)
  redis.call('DEL', ARGV[12] .. victim)
  total = redis.call('DECRBY', KEYS[4], size)
  evicted = evicted + 1
end
return evicted
`;

interface CacheCommands {
  gwCachePut(entry: string, lru: string, sizes: string, total: string, ...args: string[]): Promise<number>;
}

/**
 * The response cache in Redis, shared by every instance: the same bound and least-recently-used eviction as the
 * SQLite store (src/store/sqlite/sqlite-response-cache.ts). Expiry is decided on the caller's clock (the `expires`
 * field), PEXPIRE only lets Redis drop the entry afterwards. A hit marks its entry used (ZADD XX, not awaited).
 */
export class RedisResponseCache implements ResponseCacheStore {
  private readonly commands: CacheCommands;
  private readonly lru: string;
  private readonly sizes: string;
  private readonly total: string;
  private readonly entryPrefix: string;

  constructor(
    private readonly client: RedisClient,
    private readonly maxBytes: number,
    /** Per environment, with a hash tag: `gw:cache:{dev}:`. */
    prefix = 'gw:cache:{default}:',
  ) {
    client.defineCommand('gwCachePut', { numberOfKeys: 4, lua: PUT_LUA });
    this.commands = client as unknown as CacheCommands;
    this.lru = `${prefix}lru`;
    this.sizes = `${prefix}sizes`;
    this.total = `${prefix}bytes`;
    this.entryPrefix = `${prefix}e:`;
  }

  async get(key: string, nowMs = Date.now()): Promise<StoredResponse | undefined> {
    const now = wholeMs('nowMs', nowMs);
    const [status, kind, headers, body, stored, expires] = await this.client.hmget(
      this.entryPrefix + key,
      'status',
      'kind',
      'headers',
      'body',
      'stored',
      'expires',
    );
    if (typeof body !== 'string' || typeof headers !== 'string' || !(Number(expires) > now)) return undefined;
    void this.client.zadd(this.lru, 'XX', now, key).catch(() => undefined);
    return {
      status: Number(status),
      kind: kind === 'sse' ? 'sse' : 'json',
      headers: JSON.parse(headers) as Record<string, string>,
      body,
      storedAt: new Date(Number(stored)).toISOString(),
    };
  }

  async put(key: string, response: StoredResponse, ttlMs: number, nowMs = Date.now()): Promise<number> {
    const now = wholeMs('nowMs', nowMs);
    const ttl = durationMs('ttlMs', ttlMs);
    const bytes = Buffer.byteLength(response.body);
    if (bytes > this.maxBytes) return 0;
    const stored = Date.parse(response.storedAt) || now;
    const evicted = await this.commands.gwCachePut(
      this.entryPrefix + key,
      this.lru,
      this.sizes,
      this.total,
      key,
      String(response.status),
      response.kind,
      JSON.stringify(response.headers),
      response.body,
      String(bytes),
      String(stored),
      String(now + ttl),
      String(ttl),
      String(now),
      String(this.maxBytes),
      this.entryPrefix,
    );
    return Number(evicted);
  }

  async size(): Promise<{ entries: number; bytes: number }> {
    const [entries, bytes] = await Promise.all([this.client.zcard(this.lru), this.client.get(this.total)]);
    return { entries, bytes: Number(bytes ?? 0) };
  }
}
