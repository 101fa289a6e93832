import type { OutboxDelivery, OutboxStore } from '../store-contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import type { RedisClient } from './connect.js';

const DELIVERED_KEPT_SECONDS = 24 * 3600;

/** ARGV: prefix, now, then (id, event id, subscription, body) per delivery. An id already known is left alone. */
const ENQUEUE = `
local prefix, now = ARGV[1], ARGV[2]
for i = 3, #ARGV, 4 do
  local key = prefix .. 'd:' .. ARGV[i]
  if redis.call('EXISTS', key) == 0 then
    redis.call('HSET', key, 'event_id', ARGV[i + 1], 'subscription', ARGV[i + 2], 'body', ARGV[i + 3],
      'state', 'pending', 'attempts', 0, 'created_ms', now, 'next_attempt_ms', now)
    redis.call('ZADD', prefix .. 'due:' .. ARGV[i + 2], now, ARGV[i])
  end
end
return 1`;

/** KEYS[1] the subscription's due set; ARGV prefix, now, lease end, limit. Leases by pushing the score ahead. */
const CLAIM = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[4]))
local out = {}
for _, id in ipairs(ids) do
  redis.call('ZADD', KEYS[1], ARGV[3], id)
  local key = ARGV[1] .. 'd:' .. id
  redis.call('HSET', key, 'next_attempt_ms', ARGV[3])
  table.insert(out, id)
  table.insert(out, redis.call('HGETALL', key))
end
return out`;

/** ARGV prefix, id, new state ('delivered' | 'retry' | 'dead'), attempts, next attempt or finish time, error. */
const FINISH = `
local key = ARGV[1] .. 'd:' .. ARGV[2]
if redis.call('HGET', key, 'state') ~= 'pending' then return 0 end
local due = ARGV[1] .. 'due:' .. redis.call('HGET', key, 'subscription')
if ARGV[3] == 'retry' then
  redis.call('HSET', key, 'attempts', ARGV[4], 'next_attempt_ms', ARGV[5], 'last_error', ARGV[6])
  redis.call('ZADD', due, ARGV[5], ARGV[2])
elseif ARGV[3] == 'dead' then
  redis.call('HSET', key, 'state', 'dead', 'attempts', ARGV[4], 'last_error', ARGV[6], 'finished_ms', ARGV[5])
  redis.call('ZREM', due, ARGV[2])
  redis.call('ZADD', ARGV[1] .. 'dead', ARGV[5], ARGV[2])
else
  redis.call('HSET', key, 'state', 'delivered', 'attempts', tonumber(redis.call('HGET', key, 'attempts')) + 1, 'finished_ms', ARGV[5])
  redis.call('HDEL', key, 'last_error')
  redis.call('ZREM', due, ARGV[2])
  redis.call('EXPIRE', key, ARGV[7])
end
return 1`;

/** ARGV prefix, now, ids... Dead ones go back to pending, due now, attempts from zero. */
const REDELIVER = `
local n = 0
for i = 3, #ARGV do
  local key = ARGV[1] .. 'd:' .. ARGV[i]
  if redis.call('HGET', key, 'state') == 'dead' then
    redis.call('HSET', key, 'state', 'pending', 'attempts', 0, 'next_attempt_ms', ARGV[2])
    redis.call('HDEL', key, 'finished_ms')
    redis.call('ZREM', ARGV[1] .. 'dead', ARGV[i])
    redis.call('ZADD', ARGV[1] .. 'due:' .. redis.call('HGET', key, 'subscription'), ARGV[2], ARGV[i])
    n = n + 1
  end
end
return n`;

interface OutboxCommands {
  gwOutboxEnqueue(...args: Array<string | number>): Promise<unknown>;
  gwOutboxClaim(key: string, prefix: string, now: number, leaseEnd: number, limit: number): Promise<unknown[]>;
  gwOutboxFinish(
    prefix: string,
    id: string,
    state: string,
    attempts: number,
    at: number,
    error: string,
    keepSeconds: number,
  ): Promise<unknown>;
  gwOutboxRedeliver(...args: Array<string | number>): Promise<number>;
}

/**
 * The webhook outbox in Redis, shared by every instance: a hash per delivery, a sorted set of due deliveries per
 * subscription (score = when due; a claim pushes the score ahead by the lease, so a dispatcher that dies gives
 * its claims back by itself), and a sorted set of dead letters. Each operation is one Lua script (atomic).
 * The scripts build key names (one Redis or a single-slot setup; not Redis Cluster).
 */
export class RedisOutbox implements OutboxStore {
  private readonly commands: OutboxCommands;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix = 'gw:wh:',
  ) {
    client.defineCommand('gwOutboxEnqueue', { numberOfKeys: 0, lua: ENQUEUE });
    client.defineCommand('gwOutboxClaim', { numberOfKeys: 1, lua: CLAIM });
    client.defineCommand('gwOutboxFinish', { numberOfKeys: 0, lua: FINISH });
    client.defineCommand('gwOutboxRedeliver', { numberOfKeys: 0, lua: REDELIVER });
    this.commands = client as unknown as OutboxCommands;
  }

  async enqueue(
    deliveries: ReadonlyArray<Pick<OutboxDelivery, 'id' | 'eventId' | 'subscription' | 'body'>>,
    nowMs?: number,
  ): Promise<void> {
    if (deliveries.length === 0) return;
    const now = wholeMs('nowMs', nowMs ?? Date.now());
    await this.commands.gwOutboxEnqueue(
      this.prefix,
      now,
      ...deliveries.flatMap((d) => [d.id, d.eventId, d.subscription, d.body]),
    );
  }

  async claim(subscription: string, limit: number, leaseMs: number, nowMs?: number): Promise<OutboxDelivery[]> {
    const now = wholeMs('nowMs', nowMs ?? Date.now());
    const lease = durationMs('leaseMs', leaseMs);
    if (limit <= 0) return [];
    const flat = await this.commands.gwOutboxClaim(
      `${this.prefix}due:${subscription}`,
      this.prefix,
      now,
      now + lease,
      Math.floor(limit),
    );
    const out: OutboxDelivery[] = [];
    for (let i = 0; i < flat.length; i += 2) out.push(toDelivery(String(flat[i]), flat[i + 1] as string[]));
    return out.sort((a, b) => a.createdMs - b.createdMs || a.id.localeCompare(b.id));
  }

  async delivered(id: string, nowMs?: number): Promise<void> {
    await this.commands.gwOutboxFinish(
      this.prefix,
      id,
      'delivered',
      0,
      wholeMs('nowMs', nowMs ?? Date.now()),
      '',
      DELIVERED_KEPT_SECONDS,
    );
  }

  async retryLater(id: string, attempts: number, nextAttemptMs: number, error: string): Promise<void> {
    await this.commands.gwOutboxFinish(
      this.prefix,
      id,
      'retry',
      attempts,
      wholeMs('nextAttemptMs', nextAttemptMs),
      error,
      0,
    );
  }

  async deadLetter(id: string, attempts: number, error: string, nowMs?: number): Promise<void> {
    await this.commands.gwOutboxFinish(
      this.prefix,
      id,
      'dead',
      attempts,
      wholeMs('nowMs', nowMs ?? Date.now()),
      error,
      0,
    );
  }

  async listDead(limit: number): Promise<OutboxDelivery[]> {
    const ids = await this.client.zrange(`${this.prefix}dead`, 0, Math.max(0, Math.floor(limit)) - 1);
    const found = await Promise.all(ids.map((id) => this.get(id)));
    return found.filter((d): d is OutboxDelivery => d !== undefined);
  }

  async redeliver(ids: readonly string[], nowMs?: number): Promise<number> {
    if (ids.length === 0) return 0;
    return Number(await this.commands.gwOutboxRedeliver(this.prefix, wholeMs('nowMs', nowMs ?? Date.now()), ...ids));
  }

  async backlog(subscription: string): Promise<number> {
    return this.client.zcard(`${this.prefix}due:${subscription}`);
  }

  async get(id: string): Promise<OutboxDelivery | undefined> {
    const hash = await this.client.hgetall(`${this.prefix}d:${id}`);
    if (hash.state === undefined) return undefined;
    return fromHash(id, hash);
  }
}

function toDelivery(id: string, flat: string[]): OutboxDelivery {
  const hash: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) hash[flat[i] as string] = flat[i + 1] as string;
  return fromHash(id, hash);
}

function fromHash(id: string, h: Record<string, string>): OutboxDelivery {
  return {
    id,
    eventId: h.event_id ?? '',
    subscription: h.subscription ?? '',
    body: h.body ?? '',
    state: (h.state ?? 'pending') as OutboxDelivery['state'],
    attempts: Number(h.attempts ?? 0),
    createdMs: Number(h.created_ms ?? 0),
    nextAttemptMs: Number(h.next_attempt_ms ?? 0),
    ...(h.last_error !== undefined && h.last_error !== '' ? { lastError: h.last_error } : {}),
  };
}
