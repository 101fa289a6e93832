import type { ResponseStore, StoredConversationTurn } from '../contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import type { RedisClient } from './connect.js';

/**
 * Stored Responses API responses in Redis, shared by every gateway instance: one string per (caller, id) holding
 * the turn and its expiry, with PEXPIRE at the same deadline so Redis drops it by itself. Expiry is also checked
 * on the caller's clock (`nowMs`), as in SQLite, so both stores pass the same contract.
 */
export class RedisResponseStore implements ResponseStore {
  constructor(
    private readonly client: RedisClient,
    private readonly prefix = 'gw:resp:',
  ) {}

  private key(caller: string, id: string): string {
    return `${this.prefix}${caller.length}:${caller}:${id}`; // the length keeps "a:b"+"c" apart from "a"+"b:c"
  }

  async put(caller: string, id: string, turn: StoredConversationTurn, ttlMs: number, nowMs = Date.now()): Promise<void> {
    const ttl = durationMs('ttlMs', ttlMs);
    const expires = wholeMs('nowMs', nowMs) + ttl;
    await this.client.set(this.key(caller, id), JSON.stringify({ expires, turn }), 'PX', Math.max(1, ttl));
  }

  async get(caller: string, id: string, nowMs = Date.now()): Promise<StoredConversationTurn | undefined> {
    const now = wholeMs('nowMs', nowMs);
    const text = await this.client.get(this.key(caller, id));
    if (text === null) return undefined;
    const stored = JSON.parse(text) as { expires: number; turn: StoredConversationTurn };
    return stored.expires > now ? stored.turn : undefined;
  }

  async delete(caller: string, id: string, nowMs = Date.now()): Promise<boolean> {
    const live = await this.get(caller, id, nowMs);
    const deleted = await this.client.del(this.key(caller, id));
    return live !== undefined && deleted > 0;
  }
}
