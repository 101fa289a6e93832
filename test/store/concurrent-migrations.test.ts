/**
 * Several processes or instances starting together on a fresh store must all migrate it without error (WORKERS=2
 * on a fresh PostgreSQL used to lose a worker to `duplicate key value violates unique constraint
 * "pg_type_typname_nsp_index"`). Each test uses its own fresh table or data directory.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresUsageStore } from '../../src/store/postgres/postgres-usage.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { DATABASE_URL, postgresSkipReason } from '../helpers/services.js';
import { PROJECT_ROOT } from '../helpers/spawn-gateway.js';
import type { UsageRecord } from '../../src/store/store-contract.js';

const pgSkip = await postgresSkipReason();

const record = (requestId: string): UsageRecord => ({
  timeMs: Date.now(),
  requestId,
  caller: 'admin',
  environment: 'dev',
  route: 'chat',
  model: 'm',
  upstream: 'u',
  status: 200,
  code: null,
  latencyMs: 1,
  ttfbMs: null,
  stream: false,
  promptTokens: 1,
  completionTokens: 1,
  costUsd: null,
  attempts: 1,
  replay: false,
  cacheHit: false,
  usageAnomaly: false,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  cacheSavingsUsd: null,
});

describe('PostgreSQL: instances migrating one fresh schema at once', { skip: pgSkip }, () => {
  const tables: string[] = [];
  after(async () => {
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
    for (const table of tables)
      await pool.query(
        `DROP TABLE IF EXISTS ${table}, ${table}_hours, ${table}_latency, ${table}_size, ${table}_spool_marks`,
      );
    await pool.end();
  });

  test(
    '8 connections opening the same new table together, 4 times over: none fails, each can write',
    { timeout: 60_000 },
    async () => {
      for (let round = 0; round < 4; round++) {
        const table = `usage_mig_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
        tables.push(table);
        const opened = await Promise.allSettled(
          Array.from({ length: 8 }, () => PostgresUsageStore.open(DATABASE_URL, table)),
        );
        const stores = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
        try {
          const failures = opened.flatMap((o) => (o.status === 'rejected' ? [(o.reason as Error).message] : []));
          assert.deepEqual(failures, [], `round ${round + 1}: ${failures.join('; ')}`);
          await Promise.all(stores.map((store, i) => store.append([record(`r${round}-${i}`)])));
          const rows = await stores[0]?.stored(undefined, 100);
          assert.deepEqual(
            rows?.map((r) => r.record.requestId).sort(),
            Array.from({ length: 8 }, (_, i) => `r${round}-${i}`).sort(),
          );
        } finally {
          await Promise.all(stores.map((store) => store.close()));
        }
      }
    },
  );
});

describe('SQLite: processes opening one fresh data directory at once', () => {
  const dirs: string[] = [];
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test(
    '6 processes released together on a new gateway.db, 60 times over: all migrate it, each migration recorded once',
    { timeout: 60_000 },
    async () => {
      const children = Array.from({ length: 6 }, () => {
        const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/migrate-when-told.ts'], {
          cwd: PROJECT_ROOT,
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.setEncoding('utf8').on('data', (text: string) => (out += text));
        child.stderr.setEncoding('utf8').on('data', (text: string) => (err += text));
        const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
        return { child, exited, out: () => out, err: () => err };
      });
      const until = async (what: string, check: () => boolean) => {
        const deadline = Date.now() + 30_000;
        while (!check()) {
          if (Date.now() > deadline)
            throw new Error(`timed out waiting for ${what}: ${children.map((c) => c.err()).join('\n')}`);
          await new Promise((r) => setTimeout(r, 10));
        }
      };
      const latest = SQLITE_MIGRATIONS.at(-1)?.version;
      try {
        await until('the children to load', () => children.every((c) => c.out().includes('ready')));
        for (let round = 0; round < 60; round++) {
          const dataDir = mkdtempSync(join(tmpdir(), 'gw-mig-'));
          dirs.push(dataDir);
          for (const c of children) c.child.stdin.write(`${dataDir}\n`);
          await until(`round ${round + 1}`, () => children.every((c) => c.out().includes(` ${dataDir} `)));
          for (const c of children) {
            const line = c
              .out()
              .split('\n')
              .find((l) => l.includes(` ${dataDir} `));
            assert.equal(line, `ok ${dataDir} ${latest}`);
          }
          const store = await openSqliteStore(dataDir);
          try {
            const rows = store.db
              .prepare<[], { version: number; n: number }>(
                'SELECT version, COUNT(*) AS n FROM schema_migrations GROUP BY version ORDER BY version',
              )
              .all();
            assert.deepEqual(
              rows.map((row) => ({ ...row })),
              SQLITE_MIGRATIONS.map((m) => ({ version: m.version, n: 1 })),
            );
          } finally {
            await store.close();
          }
        }
        for (const c of children) c.child.stdin.end();
        assert.deepEqual(
          await Promise.all(children.map((c) => c.exited)),
          children.map(() => 0),
        );
      } finally {
        for (const c of children) c.child.kill('SIGKILL');
      }
    },
  );
});
