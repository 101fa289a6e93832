/**
 * Retention of usage records by size (issue 41, docs/usage.md "Retention"): the sweep keeps the records and their
 * hourly rollups under `usage.retention_max_bytes`, in steps of at most 250 rows with the loop turning between, and
 * what reads usage — the store's summaries and timeline, `gateway usage`, the dashboard's overview, a key's budget
 * left — answers the same totals before and after records were rolled up. On SQLite and PostgreSQL.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { UsageStore } from '../../src/store/store-contract.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { PostgresUsageStore } from '../../src/store/postgres/postgres-usage.js';
import { HOUR_MS } from '../../src/store/usage-rollup-sql.js';
import { STEP_ROWS, UsageRetention } from '../../src/usage/usage-retention.js';
import { usageCommand } from '../../src/cli/usage-command.js';
import { buildOverview } from '../../src/dashboard/overview.js';
import { KeyService, type KeyView } from '../../src/auth/key-service.js';
import type { KeyStore } from '../../src/store/store-contract.js';
import { loadConfig } from '../../src/config/load.js';
import { DATABASE_URL, postgresSkipReason } from '../helpers/services.js';
import { reports, variedRecords } from '../store-contract/usage-rollup-contract.js';

const skip = await postgresSkipReason();
const H0 = Date.parse('2026-11-20T10:00:00.000Z');
const END = H0 + 5 * HOUR_MS;
const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Backend {
  usage: UsageStore;
  /** The tables' size on disk as the database reports it (SQLite dbstat; PostgreSQL after VACUUM). */
  diskBytes(): Promise<number>;
  close(): Promise<void>;
}

/** A log that keeps its lines. */
function memoryLog() {
  const lines: Array<{ fields: Record<string, unknown>; msg: string }> = [];
  return { lines, warn: (fields: Record<string, unknown>, msg: string) => lines.push({ fields, msg }) };
}

/**
 * A store whose steps are watched: the rows each step was asked for, and how many steps began without the event
 * loop having turned since the last one ended (a ticker re-queued with setImmediate counts the loop's turns).
 */
function watched(store: UsageStore) {
  const steps: number[] = [];
  let turns = 0;
  let running = true;
  const tick = () => {
    turns += 1;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  let turnsWhenLastEnded: number | undefined;
  let stepsWithoutTurn = 0;
  const counted =
    (name: 'rollOldest' | 'purge' | 'purgeHours') =>
    async (...args: number[]): Promise<number> => {
      if (turns === turnsWhenLastEnded) stepsWithoutTurn += 1;
      steps.push((name === 'rollOldest' ? args[0] : args[1]) ?? Infinity);
      const n = await (store[name] as (...a: number[]) => Promise<number>).apply(store, args);
      turnsWhenLastEnded = turns;
      return n;
    };
  const proxy: UsageStore = Object.assign(Object.create(store) as UsageStore, {
    rollOldest: counted('rollOldest'),
    purge: counted('purge'),
    purgeHours: counted('purgeHours'),
  });
  return {
    store: proxy,
    steps,
    get stepsWithoutTurn() {
      return stepsWithoutTurn;
    },
    stop: () => (running = false),
  };
}

/** Everything that reads usage, over the five hours the records span (whole hours: exact whatever is rolled up). */
async function everyReader(store: UsageStore) {
  const out: string[] = [];
  const io = { out: (line: string) => out.push(line), err: (line: string) => out.push(`ERR ${line}`) };
  for (const by of ['model', 'caller', 'route', 'day'])
    assert.equal(await usageCommand(store, ['--by', by, '--since', '5h', '--format', 'json'], io, END - 1), 0);
  const overview = await buildOverview(
    {
      usage: store,
      flushUsage: async () => undefined,
      health: async () => ({
        status: 'ok',
        version: 'test',
        environment: 'dev',
        time: '',
        started_at: '',
        uptime_seconds: 0,
        checks: { store: { status: 'ok', kind: 'test', latency_ms: 0 }, upstreams: {} },
      }),
      outbox: undefined,
      subscriptions: [],
    },
    '7d',
    END - 1,
  );
  const keys = new KeyService({} as KeyStore, 'dev', { store, flush: async () => undefined });
  const views = ['abc', 'déjà-vu'].map(
    (keyId) => ({ keyId, budget: { tokens: 1e9, cost_usd: 100, period_seconds: 5 * 3600 } }) as KeyView,
  );
  return {
    cli: out,
    dashboard: {
      totals: overview.totals,
      series: overview.series.filter((p) => p.requests > 0),
      byModel: overview.byModel,
      byCaller: overview.byCaller,
      byRoute: overview.byRoute,
    },
    budgets: [...(await keys.budgetsLeft(views, END - 1 + 1))],
    usage: [...(await keys.usageOf(['abc', 'déjà-vu'], H0, END))],
    store: await reports(store, H0, END),
  };
}

function retentionSuite(name: string, open: () => Promise<Backend>) {
  describe(`usage retention by size: ${name}`, () => {
    test('the sweep keeps records and rollups under the bound, 250 rows a step, the loop turning between; every reader’s totals unchanged', async () => {
      const backend = await open();
      try {
        const records = variedRecords(6_000);
        for (let i = 0; i < records.length; i += 500) await backend.usage.append(records.slice(i, i + 500));
        const before = await everyReader(backend.usage);
        const full = await backend.usage.footprint();
        const maxBytes = Math.floor((full.recordBytes + full.hourBytes) / 4);
        const watch = watched(backend.usage);
        const log = memoryLog();
        const outcome = await new UsageRetention({
          store: watch.store,
          retentionMs: 3650 * 86_400_000,
          maxBytes,
          log,
          now: () => END,
        }).sweep();
        watch.stop();
        const after = await backend.usage.footprint();
        assert.ok(after.recordBytes + after.hourBytes <= maxBytes, `${JSON.stringify(after)} within ${maxBytes}`);
        assert.ok(outcome.rolled > 4_000, `${outcome.rolled} rolled`);
        assert.equal(after.records, 6_000 - outcome.rolled);
        assert.ok(after.records > 0, 'only what was over the bound is rolled: the newest records stay raw');
        assert.ok(
          watch.steps.every((rows) => rows <= STEP_ROWS),
          `every step at most ${STEP_ROWS} rows: ${watch.steps.join()}`,
        );
        assert.equal(watch.stepsWithoutTurn, 0, 'the event loop turned between every two steps');
        assert.deepEqual(await everyReader(backend.usage), before, 'the CLI, dashboard, budgets and key usage agree');
        assert.deepEqual(log.lines, []);
        // The newest records are the raw ones (the tail and recent failures still show them).
        const oldestRaw = Math.min(...(await backend.usage.stored(0, 10_000)).map((r) => r.record.timeMs));
        assert.ok(records.filter((r) => r.timeMs < oldestRaw).length >= outcome.rolled - 3, 'the oldest were rolled');
      } finally {
        await backend.close();
      }
    });

    test('by age: records older than retention_days and hours that ended before are deleted, in steps', async () => {
      const backend = await open();
      try {
        const records = variedRecords(1_200);
        await backend.usage.append(records);
        await backend.usage.rollOldest(600); // the first two hours rolled up, the rest raw
        const watch = watched(backend.usage);
        const cut = H0 + 3 * HOUR_MS;
        const outcome = await new UsageRetention({
          store: watch.store,
          retentionMs: 86_400_000,
          maxBytes: 2 ** 40,
          log: memoryLog(),
          now: () => cut + 86_400_000,
        }).sweep();
        watch.stop();
        assert.equal(outcome.purged, records.filter((r) => r.timeMs >= H0 + 2 * HOUR_MS && r.timeMs < cut).length);
        assert.ok(outcome.purgedHours > 0);
        assert.equal(outcome.rolled, 0, 'under the size bound: nothing rolled');
        const left = await backend.usage.summarize('route', 0, Number.MAX_SAFE_INTEGER);
        assert.equal(
          left.reduce((n, r) => n + r.requests, 0),
          records.filter((r) => r.timeMs >= cut).length,
          'nothing older than the cut-off is kept, raw or rolled up',
        );
        assert.ok(watch.steps.every((rows) => rows <= STEP_ROWS));
      } finally {
        await backend.close();
      }
    });

    test('rollups alone over half the bound (a new model name on every call): their oldest hours go, logged', async () => {
      const backend = await open();
      try {
        const records = variedRecords(2_000).map((r, i) => ({ ...r, model: `m-${i}-${randomUUID()}` }));
        for (let i = 0; i < records.length; i += 500) await backend.usage.append(records.slice(i, i + 500));
        await backend.usage.rollOldest(1_500);
        const rolledUp = await backend.usage.footprint();
        const maxBytes = Math.floor(rolledUp.hourBytes / 2);
        const log = memoryLog();
        const outcome = await new UsageRetention({
          store: backend.usage,
          retentionMs: 3650 * 86_400_000,
          maxBytes,
          log,
          now: () => END,
        }).sweep();
        const after = await backend.usage.footprint();
        assert.ok(after.recordBytes + after.hourBytes <= maxBytes);
        assert.ok(after.hourBytes <= maxBytes / 2, 'the rollups within half the bound');
        assert.ok(outcome.droppedHours > 0);
        assert.equal(log.lines.length, 1);
        assert.match(log.lines[0]?.msg ?? '', /usage rollups held more than half of usage\.retention_max_bytes/);
        assert.equal(log.lines[0]?.fields.dropped_rollup_rows, outcome.droppedHours);
      } finally {
        await backend.close();
      }
    });

    test('one caller sending a new 256-character model name with every call: rolling shrinks, no other caller loses an hour, its own totals stay exact under (other)', async () => {
      const backend = await open();
      try {
        // Four callers' history over four hours, then 50,000 calls of one caller in the fifth, each naming a new model.
        const history = variedRecords(2_000);
        const [first] = history;
        assert.ok(first);
        const hostile = Array.from({ length: 50_000 }, (_, i) => ({
          ...first,
          requestId: `h${i}`,
          caller: 'key:hostile',
          timeMs: H0 + 4 * HOUR_MS + Math.floor((i * HOUR_MS) / 50_000),
          model: `${i}-`.padEnd(256, 'x'),
          promptTokens: 1 + (i % 7),
          costUsd: 0.00001,
        }));
        const records = [...history, ...hostile];
        for (let i = 0; i < records.length; i += 5_000) await backend.usage.append(records.slice(i, i + 5_000));
        const victims = ['admin', 'key:abc', 'key:déjà-vu', 'oauth:sub'];
        const read = async () => ({
          byCaller: await backend.usage.summarize('caller', H0, END),
          byDay: await backend.usage.summarize('day', H0, END),
          keys: await backend.usage.summarizeCallers([...victims, 'key:hostile'], H0, END),
          history: await reports(backend.usage, H0, H0 + 4 * HOUR_MS),
        });
        const before = await read();
        assert.equal(before.byCaller.find((r) => r.group === 'key:hostile')?.requests, 50_000);
        const log = memoryLog();
        const maxBytes = 1_048_576;
        const outcome = await new UsageRetention({
          store: backend.usage,
          retentionMs: 3650 * 86_400_000,
          maxBytes,
          log,
          now: () => END,
        }).sweep();
        const after = await backend.usage.footprint();
        assert.ok(after.recordBytes + after.hourBytes <= maxBytes, `${JSON.stringify(after)} within ${maxBytes}`);
        // Every caller's totals (requests, errors, tokens, cost), per caller, per day and per key, unchanged.
        assert.deepEqual(await read(), before);
        assert.ok(outcome.rolled > 40_000, `${outcome.rolled} rolled`);
        assert.equal(outcome.droppedHours, 0, 'no rollup hour deleted');
        assert.deepEqual(log.lines, []);
        assert.ok(after.hourBytes < maxBytes / 4, `the rollups hold ${after.hourBytes} bytes`);
        // The hostile caller's models: 64 kept by name, the rest counted under (other).
        const models = await backend.usage.summarize('model', H0 + 4 * HOUR_MS, END);
        const other = models.find((r) => r.group === '(other)');
        assert.ok(other, 'an (other) row');
        const raw = (await backend.usage.stored(0, 100_000)).length;
        assert.equal(
          models.reduce((n, r) => n + r.requests, 0),
          50_000,
        );
        assert.ok(models.length <= 64 + 1 + raw, `${models.length} model groups, ${raw} records raw`);
        assert.ok(other.requests >= 50_000 - 64 - raw, `${other.requests} requests under (other)`);
      } finally {
        await backend.close();
      }
    });

    test('the bytes counted are close to what the tables take on disk', async () => {
      const backend = await open();
      try {
        const records = variedRecords(30_000, `d-${randomUUID()}-`);
        for (let i = 0; i < records.length; i += 500) await backend.usage.append(records.slice(i, i + 500));
        const counted = (await backend.usage.footprint()).recordBytes;
        const disk = await backend.diskBytes();
        assert.ok(
          counted > disk * 0.7 && counted < disk * 1.3,
          `counted ${counted} bytes, the database reports ${disk}`,
        );
      } finally {
        await backend.close();
      }
    });
  });
}

retentionSuite('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-retention-'));
  dirs.push(dir);
  const store: SqliteStore = await openSqliteStore(dir);
  return {
    usage: new SqliteUsageStore(store.db),
    diskBytes: async () =>
      Number(
        (
          store.db
            .prepare("SELECT sum(pgsize) AS b FROM dbstat WHERE name = 'usage_records' OR name LIKE 'usage_records_%'")
            .get() as { b: number }
        ).b,
      ),
    close: () => store.close(),
  };
});

describe('postgres', { skip }, () => {
  retentionSuite('postgres', async () => {
    const table = `usage_ret_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const usage = await PostgresUsageStore.open(DATABASE_URL, table);
    return {
      usage,
      diskBytes: async () => {
        const client = new pg.Client({ connectionString: DATABASE_URL });
        await client.connect();
        try {
          await client.query(`VACUUM ANALYZE ${table}`);
          const { rows } = await client.query<{ b: string }>(`SELECT pg_total_relation_size($1) AS b`, [table]);
          return Number(rows[0]?.b);
        } finally {
          await client.end();
        }
      },
      close: async () => {
        await usage.dropTable();
        await usage.close();
      },
    };
  });
});

describe('config: usage.retention_max_bytes', () => {
  test('defaults to 1 GiB; 1 MiB to 1 PiB; anything else refused naming the setting', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-retention-config-'));
    dirs.push(dir);
    const load = (yaml: string) => {
      const file = join(dir, `${randomUUID()}.yaml`);
      writeFileSync(file, yaml);
      return loadConfig({ GATEWAY_CONFIG: file, DATA_DIR: dir, GATEWAY_ENV: 'dev' });
    };
    assert.equal(load('usage: {}\n').usage.maxBytes, 1_073_741_824);
    assert.equal(load('usage: { retention_max_bytes: 1048576 }\n').usage.maxBytes, 1_048_576);
    for (const bad of ['1048575', '1125899906842625', '1500000.5', '"1GB"', '-1'])
      assert.throws(() => load(`usage: { retention_max_bytes: ${bad} }\n`), /retention_max_bytes/);
  });
});
