import type { NativeOwnerStore } from '../store-contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import type { RedisClient } from './connect.js';

/**
 * KEYS the ids' keys; ARGV caller, now, expiry, ttl. Each key holds `<expiry ms> <caller>` and expires with it
 * (PX); a key still live on the caller's clock keeps its owner, an absent or expired one is taken.
 */
const CLAIM = `
local now = tonumber(ARGV[2])
for i = 1, #KEYS do
  local current = redis.call('GET', KEYS[i])
  local live = false
  if current then
    local at = string.find(current, ' ', 1, true)
    live = at ~= nil and tonumber(string.sub(current, 1, at - 1)) > now
  end
  if not live then redis.call('SET', KEYS[i], ARGV[3] .. ' ' .. ARGV[1], 'PX', ARGV[4]) end
end
return 1`;

/** Keys per script call and per MGET: one answer's ids are far fewer; a long list goes in a few round trips. */
const KEYS_PER_COMMAND = 256;

interface OwnerCommands {
  gwClaimNative(...args: Array<string | number>): Promise<unknown>;
}

/**
 * The owners of upstream-held ids in Redis, shared by every instance (so a response made through one replica is
 * continued through another): one key per id. Expiry is also checked on the caller's clock, as in SQLite, so both
 * pass the same contract.
 */
export class RedisNativeOwners implements NativeOwnerStore {
  private readonly commands: OwnerCommands;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix = 'gw:own:',
  ) {
    client.defineCommand('gwClaimNative', { lua: CLAIM });
    this.commands = client as unknown as OwnerCommands;
  }

  async claim(caller: string, ids: readonly string[], ttlMs: number, nowMs = Date.now()): Promise<void> {
    const now = wholeMs('nowMs', nowMs);
    const ttl = durationMs('ttlMs', ttlMs);
    for (let i = 0; i < ids.length; i += KEYS_PER_COMMAND) {
      const keys = ids.slice(i, i + KEYS_PER_COMMAND).map((id) => this.prefix + id);
      await this.commands.gwClaimNative(keys.length, ...keys, caller, now, now + ttl, ttl);
    }
  }

  async firstNotOwned(caller: string, ids: readonly string[], nowMs = Date.now()): Promise<string | undefined> {
    const now = wholeMs('nowMs', nowMs);
    for (let i = 0; i < ids.length; i += KEYS_PER_COMMAND) {
      const chunk = ids.slice(i, i + KEYS_PER_COMMAND);
      const values = await this.client.mget(...chunk.map((id) => this.prefix + id));
      const missing = chunk.findIndex((_, j) => !ownedBy(values[j], caller, now));
      if (missing !== -1) return chunk[missing];
    }
    return undefined;
  }
}

function ownedBy(value: string | null | undefined, caller: string, now: number): boolean {
  if (typeof value !== 'string') return false;
  const at = value.indexOf(' ');
  return at !== -1 && Number(value.slice(0, at)) > now && value.slice(at + 1) === caller;
}
