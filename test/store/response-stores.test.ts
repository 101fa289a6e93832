/**
 * The stores of Responses API turns against their one contract: SQLite (memory, file) and Redis (the two state
 * stores; PostgreSQL holds usage records only). And what each kept before turns were chained still reads.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectRedis } from '../../src/store/redis/connect.js';
import { RedisResponseStore } from '../../src/store/redis/redis-response-store.js';
import { SqliteResponseStore } from '../../src/store/sqlite/sqlite-response-store.js';
import { migrate, openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openDatabase } from '../../src/store/sqlite/database.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { REDIS_URL, redisSkipReason } from '../helpers/services.js';
import { responseStoreContract } from '../store-contract/response-store-contract.js';

const skip = await redisSkipReason();

async function makeSqlite(where: 'memory' | 'file') {
  const dir = where === 'file' ? mkdtempSync(join(tmpdir(), 'gw-resp-')) : undefined;
  const sqlite = await openSqliteStore(dir ?? ':memory:');
  return {
    responses: new SqliteResponseStore(sqlite.db),
    close: async () => {
      await sqlite.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

responseStoreContract('SQLite in memory', () => makeSqlite('memory'));
responseStoreContract('SQLite on a file (WAL)', () => makeSqlite('file'));
responseStoreContract(
  'Redis',
  async () => {
    const client = await connectRedis(REDIS_URL);
    const prefix = `test:resp:${randomUUID()}:`;
    return {
      responses: new RedisResponseStore(client, prefix),
      close: async () => {
        const keys = await client.keys(`${prefix}*`);
        if (keys.length > 0) await client.del(...keys);
        await client.quit();
      },
    };
  },
  { skip },
);

/** A stored response as versions before migration 13 kept it: one row holding its whole conversation. */
const LEGACY = {
  response: JSON.stringify({ id: 'resp_legacy', object: 'response', output: [] }),
  inputItems: JSON.stringify([
    { type: 'message', id: 'msg_3', role: 'user', content: [{ type: 'input_text', text: 'three' }] },
  ]),
  conversation: JSON.stringify([
    { role: 'user', content: 'one' },
    { role: 'assistant', content: 'two' },
    { role: 'user', content: 'three' },
    { role: 'assistant', content: 'four' },
  ]),
};

function legacyTurnExpected() {
  const bytes =
    Buffer.byteLength(LEGACY.response) + Buffer.byteLength(LEGACY.inputItems) + Buffer.byteLength(LEGACY.conversation);
  return {
    response: LEGACY.response,
    inputItems: LEGACY.inputItems,
    messages: LEGACY.conversation,
    parentId: undefined,
    depth: 1,
    conversationBytes: Buffer.byteLength(LEGACY.conversation),
    bytes,
  };
}

describe('responses stored before turns were chained', () => {
  test('SQLite: migration 13 turns each whole-conversation row into a first turn that reads, continues and is counted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-resp-legacy-'));
    try {
      const old = await openDatabase(join(dir, 'gateway.db'), 5_000);
      migrate(
        old,
        SQLITE_MIGRATIONS.filter((m) => m.version <= 10),
      );
      old
        .prepare(
          'INSERT INTO stored_responses (caller, id, response, input_items, conversation, expires_ms) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run('admin', 'resp_legacy', LEGACY.response, LEGACY.inputItems, LEGACY.conversation, Date.now() + 60_000);
      old.close();
      const sqlite = await openSqliteStore(dir);
      const store = new SqliteResponseStore(sqlite.db);
      const expected = legacyTurnExpected();
      assert.deepEqual(await store.get('admin', 'resp_legacy'), { ...expected, bytes: expected.bytes + 512 });
      await store.put(
        'admin',
        'resp_next',
        {
          response: '{}',
          inputItems: '[]',
          messages: '[{"role":"user","content":"five"}]',
          parentId: 'resp_legacy',
          depth: 2,
          conversationBytes: 0,
          bytes: 10,
        },
        { ttlMs: 60_000, maxCallerBytes: 1e9 },
      );
      const read = await store.conversation('admin', 'resp_next', { maxTurns: 10, maxBytes: 1e9 });
      assert.deepEqual(
        read?.turns?.map((t) => JSON.parse(t.messages) as unknown[]).flat().length,
        5,
        'the whole old conversation, then the new turn',
      );
      assert.deepEqual(await store.usage('admin'), { turns: 2, bytes: expected.bytes + 512 + 10 });
      await sqlite.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(
    'Redis: a hash with the whole conversation reads as a first turn, continues, and deletes',
    { skip },
    async () => {
      const client = await connectRedis(REDIS_URL);
      const prefix = `test:resp:${randomUUID()}:`;
      try {
        const store = new RedisResponseStore(client, prefix);
        await client.hset(
          `${prefix}5:admin:resp_legacy`,
          'expires',
          String(Date.now() + 60_000),
          'response',
          LEGACY.response,
          'inputItems',
          LEGACY.inputItems,
          'conversation',
          LEGACY.conversation,
        );
        assert.deepEqual(await store.get('admin', 'resp_legacy'), legacyTurnExpected());
        await store.put(
          'admin',
          'resp_next',
          {
            response: '{}',
            inputItems: '[]',
            messages: '[{"role":"user","content":"five"}]',
            parentId: 'resp_legacy',
            depth: 2,
            conversationBytes: 0,
            bytes: 10,
          },
          { ttlMs: 60_000, maxCallerBytes: 1e9 },
        );
        const read = await store.conversation('admin', 'resp_next', { maxTurns: 10, maxBytes: 1e9 });
        assert.deepEqual(read?.turns?.[0], legacyTurnExpected());
        assert.equal(await store.delete('admin', 'resp_legacy'), true);
        assert.equal(await store.get('admin', 'resp_legacy'), undefined);
      } finally {
        const keys = await client.keys(`${prefix}*`);
        if (keys.length > 0) await client.del(...keys);
        await client.quit();
      }
    },
  );
});
