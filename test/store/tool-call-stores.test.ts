/**
 * The tool-call store contract (src/store/tool-call-contract.ts), run against both backends: the embedded SQLite
 * store (migration 29) and PostgreSQL (a scratch schema; skipped visibly without one). Then a gateway on PostgreSQL:
 * its tool calls land in the shared table.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { compileToolRights } from '../../src/core/mcp/tool-rights.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SqliteToolCallStore } from '../../src/store/sqlite/sqlite-tool-calls.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import { UsageRetention } from '../../src/usage/usage-retention.js';
import { PostgresToolCallStore } from '../../src/store/postgres/postgres-tool-calls.js';
import type { StoredToolCall, ToolCallStore } from '../../src/store/tool-call-contract.js';
import { startGateway } from '../helpers/gateway.js';
import { PROJECT_ROOT } from '../helpers/paths.js';
import { scratchPostgresSchema } from '../helpers/scratch-postgres-schema.js';
import { postgresSkipReason } from '../helpers/services.js';
import { waitForValue } from '../helpers/wait.js';

const T0 = Date.UTC(2026, 11, 1, 12);

function call(n: number, extra: Partial<StoredToolCall> = {}): StoredToolCall {
  return {
    timeMs: T0 + n,
    callId: `mcp_${n}`,
    requestId: `req_${n}`,
    caller: 'key:a',
    environment: 'dev',
    server: 'fs',
    tool: 'read_file',
    via: 'mcp',
    outcome: 'ok',
    code: null,
    durationMs: n,
    bytesIn: 10,
    bytesOut: 100,
    ...extra,
  };
}

function contract(name: string, open: () => Promise<{ store: ToolCallStore; close(): Promise<void> }>) {
  describe(`tool-call store: ${name}`, () => {
    let opened: { store: ToolCallStore; close(): Promise<void> };
    before(async () => {
      opened = await open();
    });
    after(async () => {
      await opened?.close();
    });

    test('records are stored whole, read newest first, summarized per caller, server and tool', async () => {
      const { store } = opened;
      // 100 ok calls of 1..100 ms, 3 refused (not in the percentiles), a timeout of 5000 ms, another tool.
      const records = [
        ...Array.from({ length: 100 }, (_, i) => call(i + 1)),
        ...[0, 1, 2].map((i) =>
          call(200 + i, { outcome: 'refused', code: 'rate_limited', durationMs: 0, bytesOut: 0 }),
        ),
        call(300, { outcome: 'timeout', code: 'mcp_tool_timeout', durationMs: 5000, bytesOut: 0 }),
        call(400, { tool: 'write_file', caller: 'admin', via: 'responses', outcome: 'tool_error' }),
      ];
      await store.appendToolCalls(records);
      const recent = await store.recentToolCalls(2);
      assert.deepEqual(recent, [records[104], records[103]]);
      const rows = await store.summarizeToolCalls(T0, T0 + 1000, 10);
      assert.deepEqual(rows, [
        {
          caller: 'key:a',
          server: 'fs',
          tool: 'read_file',
          calls: 104,
          ok: 100,
          errors: 4,
          refused: 3,
          p50Ms: 51,
          p99Ms: 100,
          bytesIn: 1040,
          bytesOut: 10_000,
        },
        {
          caller: 'admin',
          server: 'fs',
          tool: 'write_file',
          calls: 1,
          ok: 0,
          errors: 1,
          refused: 0,
          p50Ms: 400,
          p99Ms: 400,
          bytesIn: 10,
          bytesOut: 100,
        },
      ]);
      // The period bounds and the row limit.
      assert.deepEqual(
        (await store.summarizeToolCalls(T0 + 300, T0 + 301, 10)).map((r) => [r.calls, r.p50Ms]),
        [[1, 5000]],
      );
      assert.equal((await store.summarizeToolCalls(T0, T0 + 1000, 1)).length, 1);
      // A period of refusals only: no percentile.
      const refusedOnly = await store.summarizeToolCalls(T0 + 200, T0 + 203, 10);
      assert.deepEqual(
        refusedOnly.map((r) => [r.calls, r.refused, r.p50Ms, r.p99Ms]),
        [[3, 3, null, null]],
      );
    });

    test('purge deletes the oldest first, at most `limit`', async () => {
      const { store } = opened;
      assert.equal(await store.purgeToolCalls(T0 + 51, 30), 30);
      assert.equal(await store.purgeToolCalls(T0 + 51, 30), 20);
      assert.equal(await store.purgeToolCalls(T0 + 51, 30), 0);
      const left = await store.summarizeToolCalls(T0, T0 + 1000, 10);
      assert.equal(left.find((r) => r.tool === 'read_file')?.calls, 54);
    });
  });
}

contract('SQLite', async () => {
  const sqlite = await openSqliteStore(':memory:');
  return { store: new SqliteToolCallStore(sqlite.db), close: () => sqlite.close() };
});

test('the usage retention ages tool-call records out with the usage records (usage.retention_days)', async () => {
  const sqlite = await openSqliteStore(':memory:');
  try {
    const toolCalls = new SqliteToolCallStore(sqlite.db);
    const now = T0 + 10 * 86_400_000;
    await toolCalls.appendToolCalls([call(1), call(2), call(3, { timeMs: now - 1000 })]);
    const outcome = await new UsageRetention({
      store: new SqliteUsageStore(sqlite.db),
      toolCalls,
      retentionMs: 86_400_000,
      maxBytes: 1e12,
      log: { warn: () => undefined },
      now: () => now,
    }).sweep();
    assert.equal(outcome.purgedToolCalls, 2);
    assert.deepEqual(
      (await toolCalls.recentToolCalls(10)).map((r) => r.callId),
      ['mcp_3'],
    );
  } finally {
    await sqlite.close();
  }
});

const postgresSkip = await postgresSkipReason();
if (postgresSkip) {
  describe('tool-call store: PostgreSQL', { skip: postgresSkip }, () => {
    test('(skipped)', () => undefined);
  });
} else {
  contract('PostgreSQL', async () => {
    const scratch = await scratchPostgresSchema();
    const store = await PostgresToolCallStore.open(scratch.url);
    return {
      store,
      close: async () => {
        await store.close();
        await scratch.drop();
      },
    };
  });
}

describe('a gateway on PostgreSQL records its tool calls there', { skip: postgresSkip }, () => {
  let scratch: Awaited<ReturnType<typeof scratchPostgresSchema>>;
  let sqlite: SqliteStore | undefined;
  after(async () => {
    await sqlite?.close();
    await scratch?.drop();
  });

  test('a call through the wired service is in the shared table', async () => {
    scratch = await scratchPostgresSchema();
    const everything = join(PROJECT_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
    const gw = await startGateway({
      env: { DATABASE_URL: scratch.url },
      configFile: {
        name: 'mcp.json',
        text: JSON.stringify({
          mcp_servers: [{ name: 'everything', command: process.execPath, args: [everything, 'stdio'] }],
        }),
      },
    });
    const reader = await PostgresToolCallStore.open(scratch.url);
    try {
      const answer = await gw.gateway.mcp.tools.callTool(
        {
          caller: 'key:pg',
          environment: 'dev',
          rights: compileToolRights(undefined),
          limits: undefined,
          requestId: 'req_pg',
          via: 'mcp',
        },
        'everything',
        'echo',
        { message: 'to postgres' },
      );
      const stored = await waitForValue(
        'the call in PostgreSQL',
        () => reader.recentToolCalls(10),
        (rows) => rows.some((r) => r.callId === answer.callId),
      );
      const record = stored.find((r) => r.callId === answer.callId);
      assert.equal(record?.caller, 'key:pg');
      assert.equal(record?.outcome, 'ok');
      assert.equal(record?.bytesIn, Buffer.byteLength(JSON.stringify({ message: 'to postgres' })));
    } finally {
      await reader.close();
      await gw.close();
    }
  });
});
