import type { ConversationRead, ResponseStore, StoredConversationTurn, StoredUsage } from '../store-contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import type { RedisClient } from './connect.js';
import { CONVERSATION_LUA, DELETE_LUA, PUT_LUA } from './redis-response-scripts.js';

interface ResponseCommands {
  gwRespPut(
    turn: string,
    order: string,
    sizes: string,
    total: string,
    ...args: Array<string | number>
  ): Promise<number>;
  gwRespConversation(
    head: string,
    base: string,
    now: number,
    maxTurns: number,
    maxBytes: number,
  ): Promise<Array<string | number> | null>;
  gwRespDelete(turn: string, order: string, sizes: string, total: string, id: string, now: number): Promise<number>;
}

/** The fields of a turn hash a single read takes (`conversation`: a turn written before turns were chained). */
const TURN_FIELDS = [
  'expires',
  'parent',
  'depth',
  'cbytes',
  'bytes',
  'response',
  'inputItems',
  'messages',
  'conversation',
] as const;
const FIELDS_PER_TURN = 7;

/**
 * Stored Responses API turns in Redis, shared by every gateway instance: one hash per (caller, id) with PEXPIRE at
 * its deadline, and per caller the books its bound needs (scripts and layout: ./redis-response-scripts.ts). Each
 * operation is one script, so a put, its earlier turns' new expiry and any eviction happen together. Expiry is
 * also checked on the caller's clock (`nowMs`), as in SQLite, so both stores pass the same contract. A turn
 * written by an earlier version (its whole conversation in `conversation`) still reads as a first turn.
 */
export class RedisResponseStore implements ResponseStore {
  private readonly commands: ResponseCommands;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix = 'gw:resp:',
  ) {
    client.defineCommand('gwRespPut', { numberOfKeys: 4, lua: PUT_LUA });
    client.defineCommand('gwRespConversation', { numberOfKeys: 1, lua: CONVERSATION_LUA });
    client.defineCommand('gwRespDelete', { numberOfKeys: 4, lua: DELETE_LUA });
    this.commands = client as unknown as ResponseCommands;
  }

  /** The prefix of a caller's turn keys; the length keeps "a:b"+"c" apart from "a"+"b:c". */
  private base(caller: string): string {
    return `${this.prefix}${caller.length}:${caller}:`;
  }

  /** The caller's books: `@` keeps them apart from every turn key (those go on with a digit). */
  private books(caller: string): [string, string, string] {
    const at = `${this.prefix}@${caller.length}:${caller}:`;
    return [`${at}order`, `${at}sizes`, `${at}total`];
  }

  async put(
    caller: string,
    id: string,
    turn: StoredConversationTurn,
    bounds: { ttlMs: number; maxCallerBytes: number },
    nowMs = Date.now(),
  ): Promise<number> {
    const now = wholeMs('nowMs', nowMs);
    const ttl = durationMs('ttlMs', bounds.ttlMs);
    const base = this.base(caller);
    const evicted = await this.commands.gwRespPut(
      base + id,
      ...this.books(caller),
      id,
      base,
      now,
      ttl,
      bounds.maxCallerBytes,
      turn.response,
      turn.inputItems,
      turn.messages,
      turn.parentId ?? '',
      turn.depth,
      turn.conversationBytes,
      turn.bytes,
    );
    return Number(evicted);
  }

  async get(caller: string, id: string, nowMs = Date.now()): Promise<StoredConversationTurn | undefined> {
    const now = wholeMs('nowMs', nowMs);
    const [expires, parent, depth, cbytes, bytes, response, inputItems, messages, conversation] =
      await this.client.hmget(this.base(caller) + id, ...TURN_FIELDS);
    const own = messages ?? conversation;
    if (
      typeof response !== 'string' ||
      typeof inputItems !== 'string' ||
      typeof own !== 'string' ||
      Number(expires) <= now
    )
      return undefined;
    return {
      response,
      inputItems,
      messages: own,
      parentId: parent ? parent : undefined,
      depth: depth ? Number(depth) : 1,
      conversationBytes: cbytes ? Number(cbytes) : Buffer.byteLength(own),
      bytes: bytes
        ? Number(bytes)
        : Buffer.byteLength(response) + Buffer.byteLength(inputItems) + Buffer.byteLength(own),
    };
  }

  async conversation(
    caller: string,
    id: string,
    bounds: { maxTurns: number; maxBytes: number },
    nowMs = Date.now(),
  ): Promise<ConversationRead | undefined> {
    const now = wholeMs('nowMs', nowMs);
    const base = this.base(caller);
    const reply = await this.commands.gwRespConversation(
      base + id,
      base,
      now,
      Math.max(0, Math.floor(bounds.maxTurns)),
      Math.min(bounds.maxBytes, Number.MAX_SAFE_INTEGER),
    );
    if (!reply) return undefined;
    const head = { depth: Number(reply[0]), conversationBytes: Number(reply[1]) };
    if (reply.length === 2 && (head.depth > bounds.maxTurns || head.conversationBytes > bounds.maxBytes))
      return { head, turns: undefined };
    const turns: StoredConversationTurn[] = [];
    for (let i = 2; i + FIELDS_PER_TURN <= reply.length; i += FIELDS_PER_TURN) {
      const [parent, depth, cbytes, bytes, response, inputItems, messages] = reply
        .slice(i, i + FIELDS_PER_TURN)
        .map(String) as [string, string, string, string, string, string, string];
      turns.push({
        response,
        inputItems,
        messages,
        parentId: parent === '' ? undefined : parent,
        depth: Number(depth),
        conversationBytes: Number(cbytes),
        bytes: Number(bytes),
      });
    }
    return { head, turns: turns.reverse() };
  }

  async delete(caller: string, id: string, nowMs = Date.now()): Promise<boolean> {
    const now = wholeMs('nowMs', nowMs);
    return (await this.commands.gwRespDelete(this.base(caller) + id, ...this.books(caller), id, now)) === 1;
  }

  async usage(caller: string): Promise<StoredUsage> {
    const [order, , total] = this.books(caller);
    const [turns, bytes] = await Promise.all([this.client.zcard(order), this.client.get(total)]);
    return { turns, bytes: Number(bytes ?? 0) };
  }
}
