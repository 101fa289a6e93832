import type { ResponseStore, StoredConversationTurn } from '../contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import type { RedisClient } from './connect.js';

/**
 * Stored Responses API responses in Redis, shared by every gateway instance: one hash per (caller, id) with the
 * three JSON texts and the expiry, and PEXPIRE at the same deadline so Redis drops it by itself. Expiry is also
 * checked on the caller's clock (`nowMs`), as in SQLite, so both stores pass the same contract.
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
    const key = this.key(caller, id);
    await this.client
      .multi()
      .del(key)
      .hset(key, 'expires', String(expires), 'response', turn.response, 'inputItems', turn.inputItems, 'conversation', turn.conversation)
      .pexpire(key, Math.max(1, ttl))
      .exec();
  }

  async get(caller: string, id: string, nowMs = Date.now()): Promise<StoredConversationTurn | undefined> {
    const now = wholeMs('nowMs', nowMs);
    const [expires, response, inputItems, conversation] = await this.client.hmget(this.key(caller, id), 'expires', 'response', 'inputItems', 'conversation');
    if (typeof response !== 'string' || typeof inputItems !== 'string' || typeof conversation !== 'string' || Number(expires) <= now) return undefined;
    return { response, inputItems, conversation };
  }

  async delete(caller: string, id: string, nowMs = Date.now()): Promise<boolean> {
    const live = await this.get(caller, id, nowMs);
    const deleted = await this.client.del(this.key(caller, id));
    return live !== undefined && deleted > 0;
  }
}
