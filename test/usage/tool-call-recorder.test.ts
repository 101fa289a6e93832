/** The tool-call recorder: batches off the call's path, and records kept (bounded) while the store fails. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SqliteToolCallStore } from '../../src/store/sqlite/sqlite-tool-calls.js';
import type { StoredToolCall } from '../../src/store/tool-call-contract.js';
import { ToolCallRecorder } from '../../src/usage/tool-call-recorder.js';

let sqlite: SqliteStore;
before(async () => {
  sqlite = await openSqliteStore(':memory:');
});
after(async () => {
  await sqlite?.close();
});

const record = (n: number): StoredToolCall => ({
  timeMs: 1_000 + n,
  callId: `mcp_${n}`,
  requestId: 'req',
  caller: 'admin',
  environment: 'dev',
  server: 'fs',
  tool: 'read',
  via: 'mcp',
  outcome: 'ok',
  code: null,
  durationMs: 1,
  bytesIn: 1,
  bytesOut: 1,
});

test('records wait in memory while the store fails, and are written (once, in order) when it answers again', async () => {
  const real = new SqliteToolCallStore(sqlite.db);
  let failing = true;
  const writes: number[] = [];
  const store = {
    ...Object.fromEntries(['summarizeToolCalls', 'recentToolCalls', 'purgeToolCalls'].map((m) => [m, () => []])),
    appendToolCalls: async (records: readonly StoredToolCall[]) => {
      if (failing) throw new Error('store down');
      writes.push(records.length);
      await real.appendToolCalls(records);
    },
  } as unknown as SqliteToolCallStore;
  const warnings: string[] = [];
  const recorder = new ToolCallRecorder({ store, log: { warn: (_f, msg) => void warnings.push(msg) }, maxBatch: 3 });
  recorder.add(record(1));
  recorder.add(record(2));
  assert.deepEqual(writes, []); // below a batch: nothing written on the call's path
  await recorder.flush();
  assert.match(warnings[0] ?? '', /could not be written; kept/);
  recorder.add(record(3));
  failing = false;
  await recorder.flush();
  await recorder.close();
  assert.deepEqual(writes, [3]);
  assert.deepEqual(
    (await real.recentToolCalls(10)).map((r) => r.callId),
    ['mcp_3', 'mcp_2', 'mcp_1'],
  );
});
