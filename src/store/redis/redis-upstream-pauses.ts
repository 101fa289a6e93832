import type { UpstreamPauseStore } from '../contract.js';
import { gcraNow } from '../gcra.js';
import type { RedisClient } from './connect.js';

/** KEYS[1] the pause; ARGV until, now. Only ever extends; the key expires when the pause ends. */
const EXTEND = `
local current = tonumber(redis.call('GET', KEYS[1]) or 0)
local untilMs = tonumber(ARGV[1])
if untilMs > current then redis.call('SET', KEYS[1], untilMs, 'PX', untilMs - tonumber(ARGV[2])) end
return 1`;

interface PauseCommands {
  gwUpstreamPause(key: string, until: number, now: number): Promise<unknown>;
}

/** Upstream pauses in Redis, seen by every instance: one key per paused scope, expiring with the pause. */
export class RedisUpstreamPauses implements UpstreamPauseStore {
  private readonly commands: PauseCommands;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix = 'gw:pause:',
  ) {
    client.defineCommand('gwUpstreamPause', { numberOfKeys: 1, lua: EXTEND });
    this.commands = client as unknown as PauseCommands;
  }

  async pause(scope: string, untilMs: number, nowMs?: number): Promise<void> {
    const now = gcraNow(nowMs);
    const until = gcraNow(untilMs);
    if (until <= now) return;
    await this.commands.gwUpstreamPause(this.prefix + scope, until, now);
  }

  async pausedUntil(scope: string, nowMs?: number): Promise<number | undefined> {
    const stored = await this.client.get(this.prefix + scope);
    const until = stored === null ? undefined : Number(stored);
    return until !== undefined && until > gcraNow(nowMs) ? until : undefined;
  }
}
