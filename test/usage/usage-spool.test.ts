/**
 * The usage spool's parts, against the real stores: its lines (what a crash may leave of them), the marks each store
 * writes with the records (SQLite and PostgreSQL), the replay of a stopped process's spool (exactly once: records
 * already stored are skipped, a replay cut off and run again writes nothing twice, two processes starting together
 * replay it once), the live spool (records spooled before the store has them, segments rotated and deleted once
 * stored, a clean stop that removes it, a store down at the stop that leaves it for the next start, a full spool),
 * and how a spool's owner is known to be gone. The kill -9 of the real process is test/usage/usage-spool-crash.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { UsageRecord, UsageRows, UsageStore } from '../../src/store/store-contract.js';
import { PostgresUsageStore } from '../../src/store/postgres/postgres-usage.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import { UsageRowsRefused, recordRows } from '../../src/store/usage-sql.js';
import {
  isMarked,
  marksOf,
  parseSpoolLine,
  spoolLine,
  spoolScratch,
  MAX_SPOOL_LINE_CHARS,
} from '../../src/usage/spool-lines.js';
import {
  SPOOL_STALE_MS,
  isOwnerAlive,
  ownSpoolOwner,
  parseOwner,
  type SpoolOwner,
} from '../../src/usage/spool-owner.js';
import { replayDeadSpools } from '../../src/usage/spool-replay.js';
import { UsageRecorder } from '../../src/usage/usage-recorder.js';
import { UsageSpool, segmentName } from '../../src/usage/usage-spool.js';
import { DATABASE_URL, postgresSkipReason } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const pgSkip = await postgresSkipReason();

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

interface LogLine {
  level: string;
  fields: Record<string, unknown>;
  msg: string;
}

function memoryLog(): { lines: LogLine[]; info: LogFn; warn: LogFn; error: LogFn } {
  const lines: LogLine[] = [];
  const at =
    (level: string): LogFn =>
    (fields, msg) =>
      void lines.push({ level, fields, msg });
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}
type LogFn = (fields: Record<string, unknown>, msg: string) => void;

/** The lines a spool holding `records` (numbered from `first`) has on disk. */
function linesOf(records: readonly UsageRecord[], first = 1): string {
  const rows = recordRows(records);
  const scratch = spoolScratch();
  return records.map((_, i) => spoolLine(first + i, rows, i, scratch)).join('');
}

/** The token of an owner of this pid namespace (this process's unless told). */
const tokenOf = (pid: number, start: number, namespace = ownSpoolOwner().namespace): string =>
  `${namespace}-${pid}-${start}-${randomUUID().slice(-12)}`;

/** An owner that is certainly gone: a pid above any pid_max. */
const deadOwner = (): SpoolOwner => parseOwner(tokenOf(999_999_000 + Math.floor(Math.random() * 999), 0)) as SpoolOwner;

/** A stopped process's spool folder under `root`, as a crash leaves it: segments of spool lines. */
function deadSpool(root: string, segments: string[][] | string[]): string {
  const owner = deadOwner();
  const dir = join(root, owner.token);
  mkdirSync(dir, { recursive: true });
  let first = 1;
  for (const text of segments) {
    writeFileSync(join(dir, segmentName(first)), Array.isArray(text) ? text.join('') : text);
    first += 100_000;
  }
  return owner.token;
}

const storedIds = async (store: UsageStore): Promise<string[]> =>
  (await store.stored(0, 100_000)).map((s) => s.record.requestId);

/** A store whose `appendRows` fails (as a store that went down) from its `failFrom`-th call on. */
function failingFrom(store: UsageStore, failFrom: number): UsageStore {
  let calls = 0;
  return new Proxy(store, {
    get(target, name, receiver) {
      if (name === 'appendRows')
        return (rows: readonly UsageRows[], marks?: Parameters<UsageStore['appendRows']>[1]) => {
          calls += 1;
          if (calls >= failFrom) return Promise.reject(new Error('connection lost'));
          return target.appendRows(rows, marks);
        };
      return Reflect.get(target, name, receiver) as unknown;
    },
  });
}

describe('spool lines', () => {
  test('a line gives back exactly the record written, absent values as null', () => {
    const full = record(1, { stream: true, ttfbMs: 3.5, code: 'upstream_timeout', cacheSavingsUsd: -0.00000125 });
    const sparse = record(2, { model: null, upstream: null, promptTokens: null, costUsd: null, cacheReadTokens: null });
    const unicode = record(3, { model: 'modèle-\u2603-"quoted"\n', caller: 'key:ü' });
    const text = linesOf([full, sparse, unicode], 7);
    const parsed = text.split('\n').slice(0, -1).map(parseSpoolLine);
    assert.deepEqual(
      parsed.map((p) => p?.seq),
      [7, 8, 9],
    );
    assert.deepEqual(
      parsed.map((p) => p?.record),
      [full, sparse, unicode],
    );
  });

  test('a line a spool did not write whole is refused', () => {
    const good = linesOf([record(1)]).slice(0, -1);
    assert.ok(parseSpoolLine(good));
    for (const bad of [
      good.slice(0, -5), // cut by a crash
      '',
      'not json',
      '{}',
      good.replace('[1,', '[0,'), // no record 0
      good.replace('[1,', '[1.5,'),
      good.replace('"req-1"', '12'), // a number where the request id is
      good.replace('"req-1"', 'null'),
      good.replace(',10,20,', ',"10",20,'), // a string for prompt tokens
      good.replace(']', ',1]'), // one value too many
      `[1,${'9'.repeat(MAX_SPOOL_LINE_CHARS)}]`,
    ]) {
      assert.equal(parseSpoolLine(bad), undefined, bad.slice(0, 80));
    }
  });

  test('marks are the runs of record numbers; a number is found in them', () => {
    assert.deepEqual(
      marksOf('s', [5, 3, 4, 9, 0, 11, 10]).map((m) => [m.first, m.last]),
      [
        [3, 5],
        [9, 11],
      ],
    );
    assert.deepEqual(marksOf('s', []), []);
    assert.deepEqual(marksOf('s', [0, 0]), [], 'records not spooled have no mark');
    const marks = marksOf('s', [1, 2, 3, 7, 8, 20]);
    assert.deepEqual(
      [0, 1, 3, 4, 6, 7, 8, 9, 19, 20, 21].filter((seq) => isMarked(marks, seq)),
      [1, 3, 7, 8, 20],
    );
  });
});

function storeSuite(name: string, make: () => Promise<{ store: UsageStore; close: () => Promise<void> }>): void {
  describe(`spool marks and replay: ${name}`, () => {
    let harness: { store: UsageStore; close: () => Promise<void> } | undefined;
    let root = '';
    const store = (): UsageStore => {
      assert.ok(harness);
      return harness.store;
    };
    before(async () => {
      harness = await make();
    });
    after(async () => {
      await harness?.close();
    });
    const fresh = async () => {
      await store().purge(Number.MAX_SAFE_INTEGER);
      root = mkdtempSync(join(tmpdir(), 'gw-spool-'));
    };
    const self = ownSpoolOwner();
    const replay = (log = memoryLog(), on: UsageStore = store(), as: SpoolOwner = self) =>
      replayDeadSpools({ root, self: as, store: on, log, signal: new AbortController().signal });

    test('marks are written with their records, listed by spool, and forgotten', async () => {
      await fresh();
      const spool = `s-${randomUUID()}`;
      await store().appendRows([recordRows([record(1), record(2)])], marksOf(spool, [4, 5]));
      await store().appendRows([recordRows([record(3)])], marksOf(spool, [9]));
      await store().appendRows([recordRows([record(4)])], marksOf(`${spool}-other`, [1]));
      assert.deepEqual(await storedIds(store()), ['req-1', 'req-2', 'req-3', 'req-4']);
      assert.deepEqual(
        (await store().spoolMarks(spool)).map((m) => [m.first, m.last]),
        [
          [4, 5],
          [9, 9],
        ],
      );
      await store().forgetSpool(spool, 9);
      assert.deepEqual(
        (await store().spoolMarks(spool)).map((m) => [m.first, m.last]),
        [[9, 9]],
        'only the marks that end before 9',
      );
      await store().forgetSpool(spool);
      assert.deepEqual(await store().spoolMarks(spool), []);
      assert.equal((await store().spoolMarks(`${spool}-other`)).length, 1, "another spool's marks stay");
    });

    test('a refused write stores neither its records nor their marks', async () => {
      await fresh();
      const spool = `s-${randomUUID()}`;
      await assert.rejects(
        store().appendRows([recordRows([record(1), record(2, { completionTokens: 12.5 })])], marksOf(spool, [1, 2])),
        (error: unknown) => error instanceof UsageRowsRefused,
      );
      assert.deepEqual(await storedIds(store()), []);
      assert.deepEqual(await store().spoolMarks(spool), []);
    });

    test("a stopped process's spool is written once: what the store had is skipped, then the folder goes", async () => {
      await fresh();
      const records = Array.from({ length: 1_200 }, (_, i) => record(i + 1));
      const token = deadSpool(root, [linesOf(records.slice(0, 700)), linesOf(records.slice(700), 100_001)]);
      // Before the crash the recorder had written records 1..300 and 401..450 (with their marks).
      await store().appendRows([recordRows(records.slice(0, 300))], marksOf(token, range(1, 300)));
      await store().appendRows([recordRows(records.slice(400, 450))], marksOf(token, range(401, 450)));
      const log = memoryLog();
      await replay(log);
      const ids = await storedIds(store());
      assert.equal(ids.length, 1_200);
      assert.equal(new Set(ids).size, 1_200, 'no record twice');
      assert.deepEqual(readdirSync(root), [], 'the folder is removed');
      assert.deepEqual(await store().spoolMarks(token), [], 'and its marks');
      const done = log.lines.find((l) => l.msg.includes('written from its spool'));
      assert.deepEqual([done?.fields.written, done?.fields.already_stored, done?.fields.unreadable], [850, 350, 0]);
      await replay();
      assert.equal((await storedIds(store())).length, 1_200, 'a second replay finds nothing to do');
    });

    test('a replay cut off (the store went down) and run again writes nothing twice', async () => {
      await fresh();
      const records = Array.from({ length: 1_600 }, (_, i) => record(i + 1));
      const token = deadSpool(root, [linesOf(records)]);
      await assert.rejects(replay(memoryLog(), failingFrom(store(), 3)), /connection lost/);
      assert.equal((await storedIds(store())).length, 1_000, 'two writes of 500 went through');
      assert.deepEqual(readdirSync(root), [`${token}@${self.token}`], 'claimed by this process, still there');
      await replay();
      const ids = await storedIds(store());
      assert.equal(ids.length, 1_600);
      assert.equal(new Set(ids).size, 1_600);
      assert.deepEqual(readdirSync(root), []);
    });

    test('a claimer that died mid-replay leaves the spool to the next one', async () => {
      await fresh();
      const records = Array.from({ length: 900 }, (_, i) => record(i + 1));
      const token = deadSpool(root, [linesOf(records)]);
      const claimer = deadOwner();
      await assert.rejects(replay(memoryLog(), failingFrom(store(), 2), claimer), /connection lost/);
      assert.deepEqual(readdirSync(root), [`${token}@${claimer.token}`]);
      await replay();
      const ids = await storedIds(store());
      assert.equal(ids.length, 900);
      assert.equal(new Set(ids).size, 900);
    });

    test('the partial last line a crash left, and a line that cannot be read, are skipped', async () => {
      await fresh();
      const whole = linesOf([record(1), record(2), record(3)]);
      const cut = linesOf([record(4)], 4).slice(0, 40); // no `\n`: the write the kill interrupted
      const lines = whole.split('\n');
      const text = `${lines[0]}\n{"garbage\n${lines[1]}\n${lines[2]}\n${cut}`;
      deadSpool(root, [text]);
      const log = memoryLog();
      await replay(log);
      assert.deepEqual(await storedIds(store()), ['req-1', 'req-2', 'req-3']);
      const done = log.lines.find((l) => l.msg.includes('written from its spool'));
      assert.equal(done?.fields.unreadable, 1, 'the garbage line; the cut last line is not a line');
    });

    test('a spooled record the store refuses is set aside, logged whole; the others are written', async () => {
      await fresh();
      const bad = record(3, { completionTokens: 12.5 });
      deadSpool(root, [linesOf([record(1), record(2), bad, record(4)])]);
      const log = memoryLog();
      await replay(log);
      assert.deepEqual(await storedIds(store()), ['req-1', 'req-2', 'req-4']);
      const setAside = log.lines.filter((l) => l.level === 'error' && l.msg.includes('dead-lettered'));
      assert.deepEqual(
        setAside.map((l) => l.fields.usage_record),
        [bad],
      );
      assert.deepEqual(readdirSync(root), [], 'done with: the folder goes');
    });

    test('a spool whose process is alive is left alone', async () => {
      await fresh();
      const live = join(root, self.token);
      mkdirSync(live);
      writeFileSync(join(live, segmentName(1)), linesOf([record(1)]));
      const twin = ownSpoolOwner(); // another spool of this very process (another app in it)
      mkdirSync(join(root, twin.token));
      writeFileSync(join(root, twin.token, segmentName(1)), linesOf([record(2)]));
      mkdirSync(join(root, 'not-a-spool'));
      await replay();
      assert.deepEqual(await storedIds(store()), []);
      assert.deepEqual(readdirSync(root).sort(), [self.token, twin.token, 'not-a-spool'].sort());
    });

    test("another container's spool is left while its heartbeat is fresh, replayed once it is stale", async () => {
      await fresh();
      const foreign = parseOwner(tokenOf(1, 12_345, `${self.namespace}7`)) as SpoolOwner;
      const dir = join(root, foreign.token);
      mkdirSync(dir);
      writeFileSync(join(dir, segmentName(1)), linesOf([record(1), record(2)]));
      await replay();
      assert.deepEqual(await storedIds(store()), [], 'touched just now: alive');
      const old = new Date(Date.now() - SPOOL_STALE_MS - 1_000);
      utimesSync(dir, old, old);
      await replay();
      assert.deepEqual(await storedIds(store()), ['req-1', 'req-2']);
      assert.deepEqual(readdirSync(root), []);
    });

    test('two processes starting together replay one spool once', async () => {
      await fresh();
      const records = Array.from({ length: 2_000 }, (_, i) => record(i + 1));
      for (let s = 0; s < 4; s++) deadSpool(root, [linesOf(records.slice(s * 500, (s + 1) * 500))]);
      const other = ownSpoolOwner();
      await Promise.all([replay(), replay(memoryLog(), store(), other)]);
      const ids = await storedIds(store());
      assert.equal(ids.length, 2_000);
      assert.equal(new Set(ids).size, 2_000);
      assert.deepEqual(readdirSync(root), []);
    });
  });
}

/** Resolves once the spool's lines appended so far are written. */
const written = (spool: UsageSpool): Promise<void> => new Promise((resolve) => spool.afterWrite(resolve));

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

storeSuite('sqlite', async () => {
  const sqlite = await openSqliteStore(':memory:');
  return { store: new SqliteUsageStore(sqlite.db), close: () => sqlite.close() };
});

describe('postgres', { skip: pgSkip }, () => {
  storeSuite('postgres', async () => {
    const store = await PostgresUsageStore.open(
      DATABASE_URL,
      `usage_spool_${randomUUID().replaceAll('-', '').slice(0, 12)}`,
    );
    return {
      store,
      close: async () => {
        await store.dropTable();
        await store.close();
      },
    };
  });
});

describe('the live spool (embedded store)', () => {
  let dir = '';
  let sqlite: SqliteStore;
  let store: SqliteUsageStore;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-live-spool-'));
    sqlite = await openSqliteStore(join(dir, 'db'));
    store = new SqliteUsageStore(sqlite.db);
  });
  after(async () => {
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const segments = (spool: UsageSpool): string[] => (existsSync(spool.dir) ? readdirSync(spool.dir).sort() : []);
  const spooledIds = (spool: UsageSpool): string[] =>
    segments(spool).flatMap((name) =>
      readFileSync(join(spool.dir, name), 'utf8')
        .split('\n')
        .slice(0, -1)
        .map((line) => parseSpoolLine(line)?.record.requestId ?? '?'),
    );

  test('a record is in the spool as soon as it is added; once stored, the spool is empty; a clean stop removes it', async () => {
    await store.purge(Number.MAX_SAFE_INTEGER);
    const root = join(dir, `spool-${randomUUID()}`);
    const log = memoryLog();
    const spool = UsageSpool.open(root, ownSpoolOwner(), store, log);
    const recorder = new UsageRecorder({ store, log, spool, flushMs: 60_000 });
    for (let i = 1; i <= 5; i++) recorder.add(record(i));
    // An answer waits for its record's line: the lines of one turn of the event loop are written together after it.
    let released = false;
    spool.afterWrite(() => (released = true));
    assert.equal(released, false, 'held while the line is not written');
    await written(spool);
    assert.equal(released, true);
    assert.deepEqual(spooledIds(spool), ['req-1', 'req-2', 'req-3', 'req-4', 'req-5'], 'before the store has them');
    assert.deepEqual(await storedIds(store), []);
    await recorder.flush();
    assert.deepEqual(await storedIds(store), ['req-1', 'req-2', 'req-3', 'req-4', 'req-5']);
    await waitFor('the stored segment to be deleted', () => segments(spool).length === 0);
    await waitFor('its marks to be forgotten', async () => (await store.spoolMarks(spool.id)).length === 0);
    recorder.add(record(6));
    await written(spool);
    assert.deepEqual(spooledIds(spool), ['req-6'], 'a new segment for the next record');
    let now = false;
    spool.afterWrite(() => (now = true));
    assert.equal(now, true, 'nothing to wait for: released at once');
    await recorder.close();
    assert.equal(existsSync(spool.dir), false, 'the folder is gone');
    assert.deepEqual(readdirSync(root), []);
    assert.equal((await storedIds(store)).length, 6);
    assert.deepEqual(await store.spoolMarks(spool.id), []);
  });

  test('segments rotate at their size; each is deleted once all its records are stored, with its marks', async () => {
    await store.purge(Number.MAX_SAFE_INTEGER);
    const root = join(dir, `spool-${randomUUID()}`);
    const log = memoryLog();
    const spool = UsageSpool.open(root, ownSpoolOwner(), store, log, { segmentBytes: 1_024 });
    const recorder = new UsageRecorder({ store, log, spool, flushMs: 60_000, maxBatch: 1_000 });
    for (let turn = 0; turn < 10; turn++) {
      for (let i = 1; i <= 25; i++) recorder.add(record(turn * 25 + i));
      await written(spool);
    }
    const spooled = segments(spool);
    assert.equal(spooled.length, 10, 'one segment per turn: each turn wrote past 1 KiB');
    assert.equal(spooledIds(spool).length, 250);
    await recorder.flush();
    await waitFor('every stored segment to be deleted', () => segments(spool).length === 0);
    await waitFor(
      'the marks of deleted segments to be forgotten',
      async () => (await store.spoolMarks(spool.id)).length === 0,
    );
    assert.equal((await storedIds(store)).length, 250);
    await recorder.close();
  });

  test('records the store has not taken at a stop stay in the spool; the next start writes them once', async () => {
    await store.purge(Number.MAX_SAFE_INTEGER);
    const root = join(dir, `spool-${randomUUID()}`);
    const log = memoryLog();
    const owner = ownSpoolOwner();
    const down = failingFrom(store, 2);
    const spool = UsageSpool.open(root, owner, down, log, { segmentBytes: 2_048 });
    const recorder = new UsageRecorder({ store: down, log, spool, flushMs: 60_000, maxBatch: 500 });
    for (let i = 1; i <= 30; i++) recorder.add(record(i));
    await recorder.flush(); // the first write goes through
    for (let i = 31; i <= 60; i++) recorder.add(record(i));
    await recorder.close(); // the store is down now: 31..60 are not stored
    assert.equal((await storedIds(store)).length, 30);
    assert.ok(log.lines.some((l) => l.msg.includes('stay in the spool')));
    assert.deepEqual(readdirSync(root), [owner.token], 'the folder stays');
    // The next start is another process: to it, this spool's owner is gone.
    const successor = parseOwner(tokenOf(owner.pid, owner.start + 1)) as SpoolOwner;
    await replayDeadSpools({ root, self: successor, store, log, signal: new AbortController().signal });
    const ids = await storedIds(store);
    assert.equal(ids.length, 60);
    assert.equal(new Set(ids).size, 60);
    assert.deepEqual(readdirSync(root), []);
  });

  test('records dropped from memory while the store is down are written from the spool once it is back', async () => {
    await store.purge(Number.MAX_SAFE_INTEGER);
    const root = join(dir, `spool-${randomUUID()}`);
    const log = memoryLog();
    let down = true;
    const flaky = new Proxy(store, {
      get(target, name, receiver) {
        if (name === 'appendRows')
          return (rows: readonly UsageRows[], marks?: Parameters<UsageStore['appendRows']>[1]) =>
            down ? Promise.reject(new Error('connection refused')) : target.appendRows(rows, marks);
        return Reflect.get(target, name, receiver) as unknown;
      },
    });
    const spool = UsageSpool.open(root, ownSpoolOwner(), flaky, log);
    const recorder = new UsageRecorder({ store: flaky, log, spool, flushMs: 60_000 });
    // 20,050 records while the store is down: the recorder keeps the newest 20,000 in memory.
    for (let i = 1; i <= 20_050; i++) recorder.add(record(i));
    await written(spool);
    await recorder.flush();
    assert.ok(log.lines.some((l) => l.msg.includes('kept for the next batch')));
    assert.equal(spool.hasStranded, true, 'the 50 oldest are only in the spool');
    down = false;
    await recorder.flush();
    await waitFor('the stranded records to be written', () => !spool.hasStranded);
    const ids = await storedIds(store);
    assert.equal(ids.length, 20_050, 'every record, the 50 dropped from memory included');
    assert.equal(new Set(ids).size, 20_050, 'none twice');
    assert.ok(log.lines.some((l) => l.msg.includes('written from the spool') && l.fields.written === 50));
    await waitFor('the spool to be empty', () => segments(spool).length === 0);
    await recorder.close();
    assert.deepEqual(readdirSync(root), []);
  });

  test('a full spool: records go on in memory and to the store, and it is logged once', async () => {
    await store.purge(Number.MAX_SAFE_INTEGER);
    const root = join(dir, `spool-${randomUUID()}`);
    const log = memoryLog();
    const spool = UsageSpool.open(root, ownSpoolOwner(), store, log, { segmentBytes: 1_024, maxBytes: 2_048 });
    const recorder = new UsageRecorder({ store, log, spool, flushMs: 60_000 });
    for (let i = 1; i <= 40; i++) recorder.add(record(i));
    await written(spool);
    const spooled = spooledIds(spool).length;
    assert.ok(spooled > 0 && spooled < 40, `${spooled} spooled before the bound`);
    assert.equal(spool.notSpooledCount, 40 - spooled);
    const complaints = log.lines.filter((l) => l.level === 'error' && l.msg.includes('spool is full'));
    assert.equal(complaints.length, 1, 'one line, not one per record');
    await recorder.close();
    assert.equal((await storedIds(store)).length, 40, 'every record is stored all the same');
    assert.deepEqual(readdirSync(root), []);
  });
});

describe('spool owners', () => {
  const self = ownSpoolOwner();
  test('this process is alive; a process that exited is not', () => {
    assert.equal(isOwnerAlive(self, self, undefined), true);
    const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
      encoding: 'utf8',
    });
    const gone = parseOwner(tokenOf(Number(child.stdout), 0));
    assert.ok(gone);
    assert.equal(isOwnerAlive(gone, self, undefined), false);
  });

  test(
    'a pid taken by another process than the one that made the spool is not its owner',
    { skip: !existsSync('/proc/self/stat') },
    () => {
      // The same pid and start: another spool of this very process. The same pid, another start: a predecessor.
      const twin = parseOwner(tokenOf(self.pid, self.start)) as SpoolOwner;
      assert.equal(isOwnerAlive(twin, self, undefined), true);
      const predecessor = parseOwner(tokenOf(self.pid, self.start + 1)) as SpoolOwner;
      assert.equal(isOwnerAlive(predecessor, self, undefined), false);
      // The parent (alive) with its real start, and with another.
      const stat = readFileSync(`/proc/${process.ppid}/stat`, 'latin1');
      const start = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
      const parent = parseOwner(tokenOf(process.ppid, start)) as SpoolOwner;
      assert.equal(isOwnerAlive(parent, self, undefined), true);
      const reused = parseOwner(tokenOf(process.ppid, start + 7)) as SpoolOwner;
      assert.equal(isOwnerAlive(reused, self, undefined), false);
    },
  );

  test("another pid namespace's spool (another container on the folder) is judged by its heartbeat, not its pid", () => {
    // Its pid 1 and start mean nothing here: alive while its folder was touched within SPOOL_STALE_MS.
    const other = parseOwner(tokenOf(self.pid, self.start + 1, `${self.namespace}9`)) as SpoolOwner;
    const now = Date.now();
    assert.equal(isOwnerAlive(other, self, now - 5_000, now), true, 'a fresh heartbeat');
    assert.equal(isOwnerAlive(other, self, now - SPOOL_STALE_MS - 1, now), false, 'a stale one');
    assert.equal(isOwnerAlive(other, self, undefined, now), false, 'its folder gone');
  });

  test('only a token names an owner', () => {
    for (const name of [
      '',
      'x',
      '12-34',
      '7-12-34',
      '7-0-1-0123456789ab',
      '7-12-34-0123456789AB',
      '7-12-34-0123456789ab@x',
      '../7-12-1-0123456789ab',
    ])
      assert.equal(parseOwner(name), undefined, name);
    assert.deepEqual(parseOwner('7-12-34-0123456789ab'), {
      token: '7-12-34-0123456789ab',
      namespace: '7',
      pid: 12,
      start: 34,
    });
  });
});
