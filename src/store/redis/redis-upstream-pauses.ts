import type { UpstreamPauseStore } from '../store-contract.js';
import { gcraNow } from '../gcra.js';
import type { RedisClient } from './connect.js';

/**
 * KEYS[1] the pause, KEYS[2] the index of pauses; ARGV until, now, scope. Only ever extends; the key expires when
 * the pause ends. The index (a sorted set: scope by end) is what `list` reads, so health and metrics never scan
 * the keyspace; ended entries are trimmed at each write, and the index expires with its latest pause.
 */
const EXTEND = `
local current = tonumber(redis.call('GET', KEYS[1]) or 0)
local untilMs = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
if untilMs > current then
  redis.call('SET', KEYS[1], untilMs, 'PX', untilMs - now)
  redis.call('ZADD', KEYS[2], untilMs, ARGV[3])
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('PTTL', KEYS[2]) < untilMs - now then redis.call('PEXPIRE', KEYS[2], untilMs - now) end
end
return 1`;

interface PauseCommands {
  gwUpstreamPause(key: string, index: string, until: number, now: number, scope: string): Promise<unknown>;
}

/**
 * Upstream pauses in Redis, seen by every instance: one key per paused scope, expiring with the pause, and one
 * index of them (`<prefix>#index`: a scope name starts with an upstream name, never with `#`).
 */
export class RedisUpstreamPauses implements UpstreamPauseStore {
  private readonly commands: PauseCommands;
  private readonly index: string;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix = 'gw:pause:',
  ) {
    client.defineCommand('gwUpstreamPause', { numberOfKeys: 2, lua: EXTEND });
    this.commands = client as unknown as PauseCommands;
    this.index = `${prefix}#index`;
  }

  async pause(scope: string, untilMs: number, nowMs?: number): Promise<void> {
    const now = gcraNow(nowMs);
    const until = gcraNow(untilMs);
    if (until <= now) return;
    await this.commands.gwUpstreamPause(this.prefix + scope, this.index, until, now, scope);
  }

  async pausedUntil(scope: string, nowMs?: number): Promise<number | undefined> {
    const stored = await this.client.get(this.prefix + scope);
    const until = stored === null ? undefined : Number(stored);
    return until !== undefined && until > gcraNow(nowMs) ? until : undefined;
  }

  async list(nowMs?: number, limit = 100): Promise<Array<{ scope: string; untilMs: number }>> {
    // `(now`: exclusive, as everywhere else (a pause is over at its end).
    const flat = await this.client.zrevrangebyscore(
      this.index,
      '+inf',
      `(${gcraNow(nowMs)}`,
      'WITHSCORES',
      'LIMIT',
      0,
      limit,
    );
    const out: Array<{ scope: string; untilMs: number }> = [];
    for (let i = 0; i + 1 < flat.length; i += 2) out.push({ scope: flat[i] as string, untilMs: Number(flat[i + 1]) });
    return out;
  }
}
