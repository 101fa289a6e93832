/**
 * Retention of usage records by size in the real process (issue 41, docs/usage.md "Retention"):
 *
 * - kill -9 while the sweep is rolling records into their hours, then a restart on the same data folder: the
 *   database is intact and `gateway usage` (the real CLI process) prints the same totals before the start, right
 *   after the kill, and once the restarted gateway brought the records under the bound;
 * - the data folder stays near `usage.retention_max_bytes` under many calls (without the bound it grows by every
 *   record), and the records' totals are all still reported.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Pool } from 'undici';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import {
  PROJECT_ROOT,
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
} from '../helpers/spawn-gateway.js';
import { waitForValue } from '../helpers/wait.js';
import { variedRecords } from '../helpers/usage-fixtures.js';

const TOKEN = 'retention-admin-token-0123456789';
const MAX_BYTES = 1_048_576;
const PHASES = 5;

/** Calls of the `models` route counted in the rollups (the raw ones are `footprint().records`). */
function rolledCalls(dataDir: string): number {
  const db = new DatabaseSync(join(dataDir, 'gateway.db'), { readOnly: true });
  try {
    if (!db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'usage_hours'").get()) return 0;
    const row = db.prepare("SELECT coalesce(sum(requests), 0) AS n FROM usage_hours WHERE route = 'models'").get();
    return Number((row as { n: number }).n);
  } finally {
    db.close();
  }
}

/** `gateway usage --by <by> --since 30d --format json` on the data folder, run as its own process. */
async function cliUsage(dataDir: string, by: string): Promise<unknown> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'usage', '--by', by, '--since', '30d', '--format', 'json'],
    { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (out += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (err += text));
  const [code] = (await once(child, 'close')) as [number | null];
  assert.equal(code, 0, `gateway usage exited ${String(code)}: ${err}`);
  return JSON.parse(out);
}

/**
 * What the usage tables hold, read from the file by another connection (WAL: beside a running gateway): the
 * store's own counts; without them (a gateway that keeps no rollups), the records and the bytes the file uses.
 */
function footprint(dataDir: string): { records: number; bytes: number; hours: number } {
  const db = new DatabaseSync(join(dataDir, 'gateway.db'), { readOnly: true });
  try {
    const kept = db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'usage_size'").get();
    if (!kept) {
      const pages = (pragma: string) => Number(Object.values(db.prepare(`PRAGMA ${pragma}`).get() ?? {})[0]);
      const records = db.prepare('SELECT count(*) AS n FROM usage_records').get() as { n: number };
      return {
        records: Number(records.n),
        bytes: (pages('page_count') - pages('freelist_count')) * pages('page_size'),
        hours: 0,
      };
    }
    const row = db.prepare('SELECT records, record_bytes + hour_bytes AS bytes, hours FROM usage_size').get() as {
      records: number;
      bytes: number;
      hours: number;
    };
    return { records: Number(row.records), bytes: Number(row.bytes), hours: Number(row.hours) };
  } finally {
    db.close();
  }
}

/** Bytes of the SQLite database and its WAL (the rest of the folder is a token file and empty directories). */
function databaseBytes(dataDir: string): { db: number; wal: number } {
  const size = (name: string) => {
    try {
      return statSync(join(dataDir, name)).size;
    } catch {
      return 0;
    }
  };
  return { db: size('gateway.db'), wal: size('gateway.db-wal') };
}

describe('usage retention by size, in the gateway process', () => {
  let configFile: string;
  const env = () => ({ GATEWAY_ENV: 'prod', ADMIN_TOKEN: TOKEN, GATEWAY_CONFIG: configFile, LOG_LEVEL: 'warn' });
  before(() => {
    configFile = join(makeTempDir('gw-retention-config-'), 'gateway.yaml');
    writeFileSync(configFile, `usage:\n  retention_max_bytes: ${MAX_BYTES}\n`);
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
  });

  test('kill -9 while records are being rolled up, restart: the database is intact and every total is the same', async () => {
    const dataDir = makeTempDir('gw-retention-crash-');
    const now = Date.now();
    {
      // 120,000 records of the last three hours (~20 MB as counted), written as another instance would.
      const store = await openSqliteStore(dataDir);
      const usage = new SqliteUsageStore(store.db);
      const records = variedRecords(120_000).map((r, i) => ({
        ...r,
        timeMs: now - 3 * 3_600_000 + Math.floor(i * 90),
        requestId: `${r.requestId}-${i}`,
      }));
      for (let i = 0; i < records.length; i += 2_000) await usage.append(records.slice(i, i + 2_000));
      await store.close();
    }
    const groupings = ['model', 'caller'];
    const expected = await Promise.all(groupings.map((by) => cliUsage(dataDir, by)));
    assert.ok(footprint(dataDir).bytes > 15 * MAX_BYTES);

    const first = await startGatewayProcess({ env: env(), dataDir });
    // The sweep is under way once rollup rows exist; kill at once, in the middle of it.
    await waitForValue(
      'the first records rolled up',
      () => footprint(dataDir),
      (f) => f.hours > 0,
      20_000,
    );
    await first.kill();
    const atKill = footprint(dataDir);
    assert.ok(atKill.bytes > MAX_BYTES && atKill.records > 0, `killed mid-sweep: ${JSON.stringify(atKill)}`);
    const check = new DatabaseSync(join(dataDir, 'gateway.db'));
    assert.equal((check.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check, 'ok');
    check.close();
    assert.deepEqual(
      await Promise.all(groupings.map((by) => cliUsage(dataDir, by))),
      expected,
      'after the kill: nothing lost, nothing counted twice',
    );

    const second = await startGatewayProcess({ env: env(), dataDir });
    const done = await waitForValue(
      'the restarted gateway to bring the usage tables under the bound',
      () => footprint(dataDir),
      (f) => f.bytes <= MAX_BYTES,
      60_000,
    );
    assert.ok(done.records > 0, 'the newest records stay raw');
    assert.deepEqual(
      await Promise.all(groupings.map((by) => cliUsage(dataDir, by))),
      expected,
      'once under the bound: the same totals',
    );
    await second.kill();
  });

  test('the data folder stays near the bound under many calls; every call is still counted', async (t) => {
    const dataDir = makeTempDir('gw-retention-disk-');
    const gw = await startGatewayProcess({ env: env(), dataDir });
    const pool = new Pool(gw.url, { connections: 32 });
    const sizes: Array<{ db: number; wal: number }> = [];
    let sent = 0;
    try {
      for (let phase = 0; phase < PHASES; phase++) {
        // 6,000 calls, each with its own 128-character request id (the longest the gateway keeps): ~2 MB of records.
        const ids = Array.from({ length: 6_000 }, (_, i) =>
          `p${phase}-${String(i).padStart(6, '0')}-`.padEnd(128, 'x'),
        );
        let next = 0;
        const worker = async () => {
          for (let id = ids[next++]; id !== undefined; id = ids[next++]) {
            const answer = await pool.request({
              path: '/v1/models',
              method: 'GET',
              headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': id },
            });
            await answer.body.dump();
            assert.equal(answer.statusCode, 200);
          }
        };
        await Promise.all(Array.from({ length: 32 }, worker));
        sent += ids.length;
        await waitForValue(
          `the records of phase ${phase + 1} written and the tables back under the bound`,
          () => footprint(dataDir),
          (f) => f.records + f.hours > 0 && f.bytes <= MAX_BYTES && sent === f.records + rolledCalls(dataDir),
          60_000,
        );
        sizes.push(databaseBytes(dataDir));
      }
      const models = (await cliUsage(dataDir, 'route')) as Array<{ group: string; requests: number }>;
      assert.equal(models.find((r) => r.group === 'models')?.requests, sent, 'every call is still counted');
      // Without the bound the folder grows by ~2.4 MB a phase (~16 MB after 5); with it, freed pages are reused. The
      // WAL is SQLite's own (checkpointed at 1,000 pages: ~4 MB), whatever the bound.
      const total = (i: number) => (sizes[i] as { db: number }).db + (sizes[i] as { wal: number }).wal;
      const report = `after ${sent} calls, per phase: ${JSON.stringify(sizes)}`;
      t.diagnostic(report);
      assert.ok(total(PHASES - 1) <= MAX_BYTES + 8 * 1_048_576, `database and WAL near the bound; ${report}`);
      assert.ok(total(PHASES - 1) - total(2) <= 512 * 1024, `no growth phase after phase; ${report}`);
    } finally {
      await pool.close();
      await gw.kill();
    }
  });
});
