/**
 * The Lua scripts of the Redis store of Responses API turns (src/store/redis/redis-response-store.ts), each one
 * atomic step. A turn is a hash (`expires`, `response`, `inputItems`, `messages`, `parent`, `depth`, `cbytes`,
 * `bytes`), with PEXPIRE at its deadline. Per caller: `order`, a sorted set of its turns ranked for eviction,
 * `sizes` (turn id -> bytes) and `total` (their sum). The scripts reach a turn's earlier turns by building their
 * keys (`base` .. id), so every turn of a caller must live on one Redis: Redis Cluster is not supported
 * (docs/config.md).
 *
 * The rank of a turn is `expires * 1024 + 1023 - min(depth, 1023)`: least recently continued first and, at one
 * expiry (a conversation's turns share the expiry of its latest), a later turn before the turn it continues, so
 * eviction never leaves a kept turn without its earlier ones. Whole numbers below 2^53 until the year 2248.
 */

const RANK = 'local function rank(expires, depth) return expires * 1024 + 1023 - math.min(depth, 1023) end';

/**
 * KEYS: turn, order, sizes, total. ARGV: id, base, now, ttl, max caller bytes, response, inputItems, messages,
 * parent ('' for none), depth, conversation bytes, bytes. Writes the turn; its earlier turns (walked by `parent`,
 * at most depth - 1) get its expiry when theirs is sooner; up to 16 expired members leave the caller's books; then
 * while the caller is over its bound its lowest-ranked turns that this put did not touch are evicted (at most
 * 1,000 per put). The caller's books expire with its latest turn. Returns how many live turns were evicted.
 */
export const PUT_LUA = `${RANK}
local id, base = ARGV[1], ARGV[2]
local now, ttl, max = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local depth, bytes = tonumber(ARGV[10]), tonumber(ARGV[12])
local expires = now + ttl
local old = redis.call('HGET', KEYS[3], id)
if old then redis.call('DECRBY', KEYS[4], old) end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'expires', expires, 'response', ARGV[6], 'inputItems', ARGV[7], 'messages', ARGV[8],
  'parent', ARGV[9], 'depth', depth, 'cbytes', ARGV[11], 'bytes', bytes)
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('ZADD', KEYS[2], rank(expires, depth), id)
redis.call('HSET', KEYS[3], id, bytes)
local total = redis.call('INCRBY', KEYS[4], bytes)
local parent, d = ARGV[9], depth - 1
while parent ~= '' and d >= 1 do
  local key = base .. parent
  local f = redis.call('HMGET', key, 'expires', 'parent')
  if not f[1] or tonumber(f[1]) <= now then break end
  if tonumber(f[1]) < expires then
    redis.call('HSET', key, 'expires', expires)
    redis.call('PEXPIRE', key, ttl)
    redis.call('ZADD', KEYS[2], 'XX', rank(expires, d), parent)
  end
  parent = f[2] or ''
  d = d - 1
end
local function drop(member)
  local size = tonumber(redis.call('HGET', KEYS[3], member) or '0')
  redis.call('ZREM', KEYS[2], member)
  redis.call('HDEL', KEYS[3], member)
  redis.call('DEL', base .. member)
  return redis.call('DECRBY', KEYS[4], size)
end
for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now * 1024 + 1023, 'LIMIT', 0, 16)) do
  total = drop(member)
end
local evicted = 0
local touched = expires * 1024
while total > max and evicted < 1000 do
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if not first[1] or tonumber(first[2]) >= touched then break end
  total = drop(first[1])
  if tonumber(first[2]) > now * 1024 + 1023 then evicted = evicted + 1 end
end
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('PEXPIRE', KEYS[3], ttl)
redis.call('PEXPIRE', KEYS[4], ttl)
return evicted
`;

/**
 * KEYS: the head turn. ARGV: base, now, max turns, max conversation bytes. False when the head is not live; its
 * depth and conversation bytes alone when they are past the bounds; else those two, then 7 fields per turn from
 * the head up (parent, depth, cbytes, bytes, response, inputItems, messages), the walk stopping at a turn that is
 * gone. A turn written before turns were chained has `conversation` (its whole conversation) and no parent.
 */
export const CONVERSATION_LUA = `
local now = tonumber(ARGV[2])
local h = redis.call('HMGET', KEYS[1], 'expires', 'depth', 'cbytes')
if not h[1] or tonumber(h[1]) <= now then return false end
local depth = tonumber(h[2] or '1')
local cbytes = tonumber(h[3] or redis.call('HSTRLEN', KEYS[1], 'conversation'))
local out = { depth, cbytes }
if depth > tonumber(ARGV[3]) or cbytes > tonumber(ARGV[4]) then return out end
local key = KEYS[1]
for _ = 1, tonumber(ARGV[3]) do
  local f = redis.call('HMGET', key, 'expires', 'parent', 'depth', 'cbytes', 'bytes', 'response', 'inputItems', 'messages', 'conversation')
  if not f[1] or tonumber(f[1]) <= now or not f[6] or not f[7] or not (f[8] or f[9]) then break end
  local messages = f[8] or f[9]
  local parent = f[2] or ''
  out[#out + 1] = parent
  out[#out + 1] = f[3] or '1'
  out[#out + 1] = f[4] or tostring(#messages)
  out[#out + 1] = f[5] or tostring(#f[6] + #f[7] + #messages)
  out[#out + 1] = f[6]
  out[#out + 1] = f[7]
  out[#out + 1] = messages
  if parent == '' then break end
  key = ARGV[1] .. parent
end
return out
`;

/**
 * KEYS: turn, order, sizes, total. ARGV: id, now. Deletes the turn and takes it out of the caller's books; 1 when
 * it was live.
 */
export const DELETE_LUA = `
local e = redis.call('HGET', KEYS[1], 'expires')
local live = e and tonumber(e) > tonumber(ARGV[2])
redis.call('DEL', KEYS[1])
local size = redis.call('HGET', KEYS[3], ARGV[1])
if size then
  redis.call('HDEL', KEYS[3], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('DECRBY', KEYS[4], size)
end
if live then return 1 end
return 0
`;
