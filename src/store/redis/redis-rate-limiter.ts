import type { AdmissionLimit, AdmissionResult, AdmissionSettlement, LimitOutcome } from '../store-contract.js';
import {
  MAX_DEBT_WINDOWS,
  checkAdmissionLimit,
  checkRateLimit,
  gcraCharge,
  gcraNow,
  gcraTolerance,
  rateOutcome,
  rateStepInputs,
} from '../gcra.js';
import { LimitStoreBase } from '../limit-store-base.js';
import { isRedisOutage, outageAware } from '../store-outage.js';
import type { RedisClient } from './connect.js';

// An admission (every limit of a request) is one Lua script and so is a settlement: Redis runs a script
// atomically, so a read-modify-write cannot interleave with another gateway's, and a request costs two round
// trips however many limits apply (https://redis.io/docs/latest/develop/interactive/programmability/eval-intro/).
// The scripts touch several keys, so on Redis Cluster they would need one hash slot: the gateway supports a
// single Redis (with replicas / Sentinel), not Cluster, for its hot state.
//
// Clocks: the scripts use the `now` of the calling gateway, not Redis TIME, so decisions are testable with fixed
// times; several gateway hosts therefore need synchronised clocks (NTP). The scripts take max(stored TAT, now): a
// host whose clock lags sees the TAT others stored and cannot move it backwards, so lag only makes it stricter; a
// host whose clock leads by d can admit at most d ms of emission early. Key lifetimes (PX / PEXPIRE) are the
// remaining distance to the TAT or lease end, so idle keys leave Redis by themselves.

/**
 * The stored TAT of a key and whether it was repaired (gcra.ts, "Bounds"): none reads as now; a value that is not
 * a number (a key of another type included: WRONGTYPE failed every call of the key for good), or lies beyond
 * MAX_DEBT_WINDOWS windows from now, is repaired to now + tau and written back at once; a
 * past one reads as now. Numbers are written with %.0f: Lua's default formatting of a large number ("3.6e+18")
 * is not an integer to SET's PX ("ERR value is not an integer or out of range").
 */
const STORED_TAT = `
local function put(key, tat, now)
  redis.call('SET', key, string.format('%.0f', tat), 'PX', string.format('%.0f', tat - now))
end
local function stored_tat(key, now, tau)
  local raw = redis.pcall('GET', key)
  if not raw then return now end
  -- a key of another type (WRONGTYPE: an error reply, a table) is unreadable too: SET replaces it
  local tat = type(raw) == 'string' and tonumber(raw) or nil
  if tat == nil or tat ~= tat or tat > now + tau * ${MAX_DEBT_WINDOWS} then
    put(key, now + tau, now)
    return now + tau
  end
  -- whole ms, as written: a fraction (not ours) within 1 ms of now would make PX round to 0 ("invalid expire time")
  return math.max(math.ceil(tat), now)
end
-- A concurrency key that is not a sorted set (WRONGTYPE) holds no slot anyone can read: it is dropped, so the
-- step counts from none rather than failing every call of the key for good.
local function usable_slots(key)
  local reply = redis.pcall('TYPE', key)
  local kind = type(reply) == 'table' and reply.ok or reply
  if kind ~= 'zset' and kind ~= 'none' then redis.call('DEL', key) end
end
local function moved(tat, charge, now, tau)
  return math.min(math.max(tat + charge, now), now + tau * ${MAX_DEBT_WINDOWS})
end
`;

/**
 * KEYS: one per limit. ARGV[1] now, then four per limit i at 4i-2 .. 4i+1:
 *   rate:        'r' (or 'o' when oversized: read, never allowed), charge ms, tau ms, need ms (the shift that
 *                must fit; see rateStepInputs)
 *   concurrency: 'c', max, lease end ms, the holder's token
 * Returns {admitted 0|1, then per limit: allowed 0|1, a, b} with a, b = TAT, requested TAT (rate) or
 * in-flight count, 0 (concurrency). Writes happen only when every limit allowed (a repair, at once). Several
 * slots of one key (one token each) may be taken in one admission.
 */
const ADMIT = `${STORED_TAT}
local now = tonumber(ARGV[1])
local out = {1}
local taking = {}
for i = 1, #KEYS do
  local kind = ARGV[4 * i - 2]
  local a = tonumber(ARGV[4 * i - 1])
  local b = tonumber(ARGV[4 * i])
  if kind == 'c' then
    local token = ARGV[4 * i + 1]
    usable_slots(KEYS[i])
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
    local mine = redis.call('ZSCORE', KEYS[i], token)
    -- slots of this key taken by earlier items of the same admission count too
    local held = redis.call('ZCARD', KEYS[i]) + (taking[KEYS[i]] or 0)
    if mine then
      out[#out + 1] = 1; out[#out + 1] = held
    elseif held < a then
      taking[KEYS[i]] = (taking[KEYS[i]] or 0) + 1
      out[#out + 1] = 1; out[#out + 1] = held + 1
    else
      out[#out + 1] = 0; out[#out + 1] = held; out[1] = 0
    end
    out[#out + 1] = 0
  else
    local tat = stored_tat(KEYS[i], now, b)
    local need = tonumber(ARGV[4 * i + 1])
    if kind == 'r' and tat + need - now <= b then
      local requested = moved(tat, a, now, b)
      out[#out + 1] = 1; out[#out + 1] = requested; out[#out + 1] = requested
    else
      out[#out + 1] = 0; out[#out + 1] = tat; out[#out + 1] = tat + need; out[1] = 0
    end
  end
end
if out[1] == 1 then
  for i = 1, #KEYS do
    if ARGV[4 * i - 2] == 'c' then
      redis.call('ZADD', KEYS[i], ARGV[4 * i], ARGV[4 * i + 1])
      local last = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
      redis.call('PEXPIRE', KEYS[i], string.format('%.0f', tonumber(last[2]) - now))
    else
      local requested = out[3 * i + 1]
      if requested > now then put(KEYS[i], requested, now) end
    end
  end
end
return out`;

/**
 * KEYS: one per item. ARGV[1] now, then three per item i at 3i-1 .. 3i+1: 'c', the token whose slot to release,
 * '' ; or 'r', a TAT shift in ms (negative gives back), tau ms. The TAT never moves below now (giving back cannot
 * fill beyond full) nor past the ceiling.
 */
const SETTLE = `${STORED_TAT}
local now = tonumber(ARGV[1])
for i = 1, #KEYS do
  local kind = ARGV[3 * i - 1]
  if kind == 'c' then
    usable_slots(KEYS[i])
    redis.call('ZREM', KEYS[i], ARGV[3 * i])
  else
    local tau = tonumber(ARGV[3 * i + 1])
    local tat = moved(stored_tat(KEYS[i], now, tau), tonumber(ARGV[3 * i]), now, tau)
    if tat > now then put(KEYS[i], tat, now) else redis.call('DEL', KEYS[i]) end
  end
end
return #KEYS`;

type Script = (keys: readonly string[], args: ReadonlyArray<string | number>) => Promise<unknown>;
type RawCommand = (numberOfKeys: number, ...keysAndArgs: Array<string | number>) => Promise<unknown>;

/**
 * Registers a script with ioredis (EVALSHA, falling back to EVAL when the server does not have it cached). The
 * number of keys varies per call (one per limit), so it is passed with each call.
 */
function defineScript(client: RedisClient, name: string, lua: string): Script {
  client.defineCommand(name, { lua });
  const command = (client as unknown as Record<string, RawCommand | undefined>)[name];
  if (typeof command !== 'function') throw new Error(`ioredis did not define the command ${name}`);
  return (keys, args) => command.call(client, keys.length, ...keys, ...args);
}

/** A script's reply as numbers: anything else means a broken script, not a decision. */
function numbers(reply: unknown, count: number): number[] {
  if (!Array.isArray(reply) || reply.length !== count || !reply.every((n) => typeof n === 'number')) {
    throw new Error(`unexpected reply from a rate-limit script: ${JSON.stringify(reply)}`);
  }
  return reply as number[];
}

export interface RedisRateLimiterOptions {
  /** Prepended to every key, before `rl:` / `cc:`; "gw:" by default. Tests use a random one to isolate runs. */
  prefix?: string;
}

/** Rate limits and in-flight leases in Redis, shared by every gateway instance: N replicas admit `limit` in total. */
export class RedisRateLimiter extends LimitStoreBase {
  private readonly rateKey: (key: string) => string;
  private readonly leaseKey: (key: string) => string;
  private readonly admitScript: Script;
  private readonly settleScript: Script;

  constructor(client: RedisClient, options: RedisRateLimiterOptions = {}) {
    super();
    const prefix = options.prefix ?? 'gw:';
    this.rateKey = (key) => `${prefix}rl:${key}`;
    this.leaseKey = (key) => `${prefix}cc:${key}`;
    this.admitScript = defineScript(client, 'gwLimitsAdmit', ADMIT);
    this.settleScript = defineScript(client, 'gwLimitsSettle', SETTLE);
  }

  async admit(limits: readonly AdmissionLimit[], token: string, nowMs?: number): Promise<AdmissionResult> {
    limits.forEach(checkAdmissionLimit);
    const now = gcraNow(nowMs);
    if (limits.length === 0) return { admitted: true, outcomes: [] };
    const keys: string[] = [];
    const args: Array<string | number> = [now];
    for (const limit of limits) {
      if (limit.kind === 'rate') {
        const { charge, need, tau, oversized } = rateStepInputs(limit);
        keys.push(this.rateKey(limit.key));
        args.push(oversized ? 'o' : 'r', charge, tau, need);
      } else {
        keys.push(this.leaseKey(limit.key));
        args.push('c', limit.max, now + Math.ceil(limit.leaseMs), limit.token ?? token);
      }
    }
    const reply = numbers(
      await outageAware('redis', isRedisOutage, () => this.admitScript(keys, args)),
      1 + 3 * limits.length,
    );
    const outcomes = limits.map((limit, i): LimitOutcome => {
      const [allowed, a, b] = reply.slice(1 + 3 * i, 4 + 3 * i) as [number, number, number];
      if (limit.kind === 'concurrency') return { kind: 'concurrency', acquired: allowed === 1, inFlight: a };
      return rateOutcome(limit, { allowed: allowed === 1, tat: a, requestedTat: b }, now);
    });
    return { admitted: reply[0] === 1, outcomes };
  }

  async settle(items: readonly AdmissionSettlement[], token: string, nowMs?: number): Promise<void> {
    for (const item of items) if (item.kind === 'rate') checkRateLimit(item.limit, item.windowMs, item.delta, 'delta');
    const now = gcraNow(nowMs);
    const keys: string[] = [];
    const args: Array<string | number> = [now];
    for (const item of items) {
      if (item.kind === 'concurrency') {
        keys.push(this.leaseKey(item.key));
        args.push('c', item.token ?? token, '');
        continue;
      }
      const charge = gcraCharge(item.delta, item.limit, item.windowMs);
      if (charge === 0) continue;
      keys.push(this.rateKey(item.key));
      args.push('r', charge, gcraTolerance(item.windowMs));
    }
    if (keys.length > 0) await outageAware('redis', isRedisOutage, () => this.settleScript(keys, args));
  }
}
