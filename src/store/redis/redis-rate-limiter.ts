import type { ConcurrencyLimiter, RateLimitDecision, RateLimiter } from '../contract.js';
// Pure GCRA arithmetic only (that module imports the SQLite driver as a type, so nothing of it loads here).
import {
  checkLease,
  checkRateLimit,
  gcraCharge,
  gcraDecision,
  gcraNow,
  gcraOversized,
  gcraTolerance,
  type GcraStep,
} from '../sqlite/sqlite-rate-limiter.js';
import type { RedisClient } from './connect.js';

// Each operation is one Lua script: Redis runs a script atomically, so a read-modify-write of a key cannot
// interleave with another gateway's (https://redis.io/docs/latest/develop/interactive/programmability/eval-intro/).
//
// Clocks: the scripts use the `now` of the calling gateway, not Redis TIME, so decisions are testable with fixed
// times; several gateway hosts therefore need synchronised clocks (NTP). The scripts take max(stored TAT, now): a
// host whose clock lags sees the TAT others stored and cannot move it backwards, so lag only makes it stricter; a
// host whose clock leads by d can admit at most d ms of emission early. Key lifetimes (PX / PEXPIRE) are the
// remaining distance to the TAT or lease end, so idle keys leave Redis by themselves.

/** KEYS[1] the TAT; ARGV charge (ms), tau (ms), now. Returns {allowed 0|1, TAT after, requested TAT}. */
const CONSUME = `
local now = tonumber(ARGV[3])
local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or ARGV[3]), now)
local requested = tat + tonumber(ARGV[1])
if requested - now > tonumber(ARGV[2]) then return {0, tat, requested} end
if requested > now then redis.call('SET', KEYS[1], requested, 'PX', requested - now) end
return {1, requested, requested}`;

/** KEYS[1] the TAT; ARGV charge (ms, may be negative), now. Never moves the TAT below now (a full bucket). */
const ADJUST = `
local now = tonumber(ARGV[2])
local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or ARGV[2]), now)
tat = math.max(tat + tonumber(ARGV[1]), now)
if tat > now then redis.call('SET', KEYS[1], tat, 'PX', tat - now) else redis.call('DEL', KEYS[1]) end
return tat`;

/**
 * KEYS[1] a sorted set of leases (member token, score lease end); ARGV token, max, now, lease end.
 * Returns {acquired 0|1, in flight}. The same token asking again renews its lease rather than taking a second slot.
 */
const ACQUIRE = `
local now = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local mine = redis.call('ZSCORE', KEYS[1], ARGV[1])
local held = redis.call('ZCARD', KEYS[1])
if not mine and held >= tonumber(ARGV[2]) then return {0, held} end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
if not mine then held = held + 1 end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', KEYS[1], tonumber(last[2]) - now)
return {1, held}`;

type Script = (key: string, ...args: Array<string | number>) => Promise<unknown>;

/** Registers a script with ioredis (EVALSHA, falling back to EVAL when the server does not have it cached). */
function defineScript(client: RedisClient, name: string, lua: string): Script {
  client.defineCommand(name, { numberOfKeys: 1, lua });
  const command = (client as unknown as Record<string, Script | undefined>)[name];
  if (typeof command !== 'function') throw new Error(`ioredis did not define the command ${name}`);
  return command.bind(client);
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
export class RedisRateLimiter implements RateLimiter, ConcurrencyLimiter {
  private readonly rateKey: (key: string) => string;
  private readonly leaseKey: (key: string) => string;
  private readonly consumeScript: Script;
  private readonly adjustScript: Script;
  private readonly acquireScript: Script;

  constructor(
    private readonly client: RedisClient,
    options: RedisRateLimiterOptions = {},
  ) {
    const prefix = options.prefix ?? 'gw:';
    this.rateKey = (key) => `${prefix}rl:${key}`;
    this.leaseKey = (key) => `${prefix}cc:${key}`;
    this.consumeScript = defineScript(client, 'gwRateLimitConsume', CONSUME);
    this.adjustScript = defineScript(client, 'gwRateLimitAdjust', ADJUST);
    this.acquireScript = defineScript(client, 'gwConcurrencyAcquire', ACQUIRE);
  }

  async consume(key: string, limit: number, windowMs: number, cost: number, nowMs?: number): Promise<RateLimitDecision> {
    checkRateLimit(limit, windowMs, cost, 'cost');
    const now = gcraNow(nowMs);
    if (cost > limit) {
      const stored = await this.client.get(this.rateKey(key));
      return gcraOversized(stored === null ? now : Number(stored), limit, windowMs, now);
    }
    const reply = await this.consumeScript(this.rateKey(key), gcraCharge(cost, limit, windowMs), gcraTolerance(windowMs), now);
    const [allowed, tat, requestedTat] = numbers(reply, 3) as [number, number, number];
    const step: GcraStep = { allowed: allowed === 1, tat, requestedTat };
    return gcraDecision(step, limit, windowMs, now);
  }

  async adjust(key: string, limit: number, windowMs: number, delta: number, nowMs?: number): Promise<void> {
    checkRateLimit(limit, windowMs, delta, 'delta');
    const now = gcraNow(nowMs);
    const charge = gcraCharge(delta, limit, windowMs);
    if (charge !== 0) await this.adjustScript(this.rateKey(key), charge, now);
  }

  async acquire(key: string, token: string, max: number, leaseMs: number, nowMs?: number): Promise<{ acquired: boolean; inFlight: number }> {
    checkLease(max, leaseMs);
    const now = gcraNow(nowMs);
    const reply = await this.acquireScript(this.leaseKey(key), token, max, now, now + Math.ceil(leaseMs));
    const [acquired, inFlight] = numbers(reply, 2) as [number, number];
    return { acquired: acquired === 1, inFlight };
  }

  async release(key: string, token: string): Promise<void> {
    await this.client.zrem(this.leaseKey(key), token);
  }
}
