/**
 * The usage recorder's buffer and batches, against the real embedded store: the columnar buffer gives back
 * exactly the records put in, a full batch is written at once and a partial one on the timer, and while the
 * store refuses writes (another connection holds the write lock) records wait, are capped, and are written in
 * order once it accepts them again.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { UsageRecord } from '../../src/store/store-contract.js';
import { openSqliteStore, SQLITE_FILE, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import { USAGE_COLUMNS, writeRecordValues } from '../../src/store/usage-sql.js';
import { UsageColumns } from '../../src/usage/usage-columns.js';
import { UsageRecorder } from '../../src/usage/usage-recorder.js';

const record = (i: number, extra: Partial<UsageRecord> = {}): UsageRecord => ({
  timeMs: 1_790_000_000_000 + i,
  requestId: `req-${i}`,
  caller: 'key:k1',
  environment: 'prod',
  route: 'chat',
  model: 'gpt-4o-mini',
  upstream: 'default',
  status: 200,
  code: null,
  latencyMs: 12.34,
  ttfbMs: null,
  stream: false,
  promptTokens: 10,
  completionTokens: 20,
  costUsd: 0.000123,
  attempts: 1,
  replay: false,
  cacheHit: false,
  usageAnomaly: false,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  cacheSavingsUsd: null,
  ...extra,
});

describe('usage columns', () => {
  test('give back exactly the records pushed, absent values as null, in order', () => {
    const columns = new UsageColumns(3);
    const full = record(1, {
      stream: true,
      ttfbMs: 3.5,
      replay: true,
      attempts: 3,
      status: 502,
      code: 'upstream_unavailable',
      cacheReadTokens: 8,
      cacheSavingsUsd: -0.00000125,
    });
    const sparse = record(2, {
      model: null,
      upstream: null,
      promptTokens: null,
      completionTokens: null,
      costUsd: null,
      status: 401,
      code: 'unauthorized',
      attempts: 0,
    });
    const zeroes = record(3, { promptTokens: 0, completionTokens: 0, costUsd: 0, latencyMs: 0 });
    columns.pushRecord(full);
    columns.pushRecord(sparse);
    assert.equal(columns.full, false);
    columns.pushRecord(zeroes);
    assert.equal(columns.full, true);
    columns.pushRecord(record(4)); // ignored: full
    assert.equal(columns.length, 3);
    assert.deepEqual(columns.toRecords(), [full, sparse, zeroes]);
    columns.clear();
    assert.equal(columns.length, 0);
    assert.deepEqual(columns.toRecords(), []);
    columns.pushRecord(record(5));
    assert.deepEqual(columns.toRecords(), [record(5)]);
  });

  test("write each row's values in the store's column order, as the record's own values would be", () => {
    const records = [
      record(1, {
        stream: true,
        ttfbMs: 3.5,
        replay: true,
        cacheHit: true,
        attempts: 3,
        status: 502,
        code: 'upstream_unavailable',
        cacheSavingsUsd: -0.0000125,
      }),
      record(2, {
        model: null,
        upstream: null,
        promptTokens: null,
        completionTokens: null,
        costUsd: null,
        status: 401,
        code: 'unauthorized',
        attempts: 0,
      }),
    ];
    const columns = new UsageColumns(2);
    for (const r of records) columns.pushRecord(r);
    const fromColumns: unknown[] = new Array(2 * USAGE_COLUMNS.length);
    const fromRecords: unknown[] = new Array(2 * USAGE_COLUMNS.length);
    for (let i = 0; i < 2; i++) {
      columns.writeValues(i, fromColumns, i * USAGE_COLUMNS.length);
      writeRecordValues(records[i] as UsageRecord, fromRecords, i * USAGE_COLUMNS.length);
    }
    assert.deepEqual(fromColumns, fromRecords);
    assert.deepEqual(fromColumns.slice(0, USAGE_COLUMNS.length), [
      1_790_000_000_001,
      'req-1',
      'key:k1',
      'prod',
      'chat',
      'gpt-4o-mini',
      'default',
      502,
      'upstream_unavailable',
      12.34,
      3.5,
      1,
      10,
      20,
      0.000123,
      3,
      1,
      1,
      0,
      0,
      0,
      0,
      -0.0000125,
    ]);
  });
});

describe('usage recorder (SQLite)', () => {
  let dir: string;
  let sqlite: SqliteStore;
  let store: SqliteUsageStore;
  const warnings: Array<{ fields: Record<string, unknown>; msg: string }> = [];
  const log = {
    warn: (fields: Record<string, unknown>, msg: string) => warnings.push({ fields, msg }),
    error: (fields: Record<string, unknown>, msg: string) => warnings.push({ fields, msg }),
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'usage-recorder-'));
    sqlite = await openSqliteStore(dir);
    sqlite.db.pragma('busy_timeout = 0'); // a locked file fails at once instead of waiting 5 s
    store = new SqliteUsageStore(sqlite.db);
  });
  after(async () => {
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const storedIds = async () => (await store.stored(0, 100_000)).map((s) => s.record.requestId);

  test('a full batch is written at once, a partial one when its timer fires', async () => {
    await store.purge(Number.MAX_SAFE_INTEGER);
    const recorder = new UsageRecorder({ store, log, maxBatch: 3, flushMs: 60_000 });
    for (let i = 0; i < 3; i++) recorder.add(record(i));
    await new Promise((resolve) => setTimeout(resolve, 20)); // the batch's transaction runs on a later turn
    assert.deepEqual(await storedIds(), ['req-0', 'req-1', 'req-2'], 'written without waiting for the timer');
    const [first] = await store.stored(0, 1);
    assert.deepEqual(first?.record, record(0));
    await recorder.close();

    const timed = new UsageRecorder({ store, log, maxBatch: 3, flushMs: 50 });
    timed.add(record(3));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal((await storedIds()).length, 3, 'a partial batch waits for its timer');
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.deepEqual(await storedIds(), ['req-0', 'req-1', 'req-2', 'req-3']);
    await timed.close();
  });

  test('while the store refuses writes records wait (the newest 20,000), then are written in order', async () => {
    await store.purge(Number.MAX_SAFE_INTEGER);
    warnings.length = 0;
    const recorder = new UsageRecorder({ store, log, maxBatch: 500, flushMs: 60_000 });
    const locker = new DatabaseSync(path.join(dir, SQLITE_FILE));
    locker.exec('BEGIN IMMEDIATE'); // holds the write lock: every write of the recorder fails with SQLITE_BUSY
    try {
      for (let i = 0; i < 20_050; i++) recorder.add(record(i));
      await recorder.flush();
      assert.ok(
        warnings.some((w) => w.msg.includes('could not be written')),
        'the failed write is logged',
      );
      assert.deepEqual(await storedIds(), []);
    } finally {
      locker.exec('ROLLBACK');
      locker.close();
    }
    await recorder.flush();
    const ids = await storedIds();
    assert.equal(ids.length, 20_000);
    assert.equal(ids[0], 'req-50', 'the 50 oldest were dropped');
    assert.equal(ids.at(-1), 'req-20049');
    assert.deepEqual(ids.slice(0, 3), ['req-50', 'req-51', 'req-52']);
    const dropped = warnings.find((w) => w.msg.includes('dropped'));
    assert.equal(dropped?.fields.dropped, 50, 'the drop is counted in the log once writes succeed');
    await recorder.close();
  });
});
