/**
 * The rate-limiter contract against every backend (SQLite in memory and on a file, Redis), plus what only a
 * shared backend can show: separate OS processes hammering one key admit exactly the limit in total.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectRedis, type RedisClient } from '../../src/store/redis/connect.js';
import { RedisRateLimiter } from '../../src/store/redis/redis-rate-limiter.js';
import { SqliteRateLimiter } from '../../src/store/sqlite/sqlite-rate-limiter.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openDatabase } from '../../src/store/sqlite/database.js';
import { StoreOutageError } from '../../src/store/store-outage.js';
import type { WorkerJob } from '../fixtures/rate-limit-worker.js';
import { REDIS_URL, redisSkipReason } from '../helpers/services.js';
import { rateLimiterContract } from '../store-contract/rate-limiter-contract.js';
import { PROJECT_ROOT } from '../helpers/paths.js';

const skip = await redisSkipReason();
const ROOT = PROJECT_ROOT;
const WORKER = fileURLToPath(new URL('../fixtures/rate-limit-worker.ts', import.meta.url));

function tempDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'gw-rate-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A random prefix per run, so runs never see each other's keys and can delete their own afterwards. */
function testPrefix(): string {
  return `gw-test:${randomUUID()}:`;
}

async function deleteKeys(client: RedisClient, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [nextCursor, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    if (keys.length > 0) await client.del(...keys);
    cursor = nextCursor;
  } while (cursor !== '0');
}

rateLimiterContract('sqlite :memory:', async () => {
  const store = await openSqliteStore(':memory:');
  return { limiter: new SqliteRateLimiter(store.db), close: () => store.close() };
});

rateLimiterContract('sqlite file', async () => {
  const temp = tempDir();
  const store = await openSqliteStore(temp.dir);
  return {
    limiter: new SqliteRateLimiter(store.db),
    close: async () => {
      await store.close();
      temp.remove();
    },
  };
});

describe('redis', { skip }, () => {
  rateLimiterContract('redis', async () => {
    const prefix = testPrefix();
    const client = await connectRedis(REDIS_URL);
    return {
      limiter: new RedisRateLimiter(client, { prefix }),
      close: async () => {
        await deleteKeys(client, prefix);
        await client.quit();
      },
    };
  });

  test('keys live under the prefix with rl: / cc: and expire by themselves', async () => {
    const prefix = testPrefix();
    const client = await connectRedis(REDIS_URL);
    try {
      const limiter = new RedisRateLimiter(client, { prefix });
      await limiter.consume('k', 10, 60_000, 3, 5_000_000); // TAT 18 s ahead of now
      await limiter.acquire('k', 'token', 2, 30_000, 5_000_000);
      const rateTtl = await client.pttl(`${prefix}rl:k`);
      const leaseTtl = await client.pttl(`${prefix}cc:k`);
      assert.ok(rateTtl > 17_000 && rateTtl <= 18_000, `rate key TTL ${rateTtl}`);
      assert.ok(leaseTtl > 29_000 && leaseTtl <= 30_000, `lease key TTL ${leaseTtl}`);
      await limiter.adjust('k', 10, 60_000, -3, 5_000_000);
      assert.equal(await client.exists(`${prefix}rl:k`), 0, 'a key back to a full bucket is deleted');
      await limiter.release('k', 'token');
      assert.equal(await client.exists(`${prefix}cc:k`), 0, 'an empty lease set is gone');
    } finally {
      await deleteKeys(client, prefix);
      await client.quit();
    }
  });
});

describe('SqliteRateLimiter housekeeping', () => {
  test('expired rows are purged in batches every 1000 calls, not on every call', async () => {
    const store = await openSqliteStore(':memory:');
    try {
      const limiter = new SqliteRateLimiter(store.db);
      const count = (table: string) =>
        (store.db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
      for (let i = 0; i < 5; i++) await limiter.consume(`old-${i}`, 10, 1000, 1, 1000); // expire at 1100
      await limiter.acquire('old-lease', 'a', 1, 500, 1000); // ends at 1500
      for (let i = 0; i < 993; i++) await limiter.consume('hot', 10, 1000, 1, 1_000_000);
      assert.equal(count('rate_limits'), 6, 'nothing purged after 999 calls');
      assert.equal(count('concurrency_leases'), 1);
      await limiter.consume('hot', 10, 1000, 1, 1_000_000);
      assert.equal(count('rate_limits'), 1, 'the 1000th call purged the expired keys');
      assert.equal(count('concurrency_leases'), 0);
    } finally {
      await store.close();
    }
  });
});

describe('a stored window that cannot be read is repaired, not skipped; an outage is told from a bug (issue 41)', () => {
  const HOUR = 3_600_000;
  const NOW = 1_700_000_000_000;

  test('SQLite: a TAT of 3.6e18 (written before the bounds) reads, is repaired to one window of debt and written back', async () => {
    const store = await openSqliteStore(':memory:');
    try {
      store.db
        .prepare('INSERT INTO rate_limits (key, tat_ms, expires_ms) VALUES (?, ?, ?)')
        .run('budget', 3_600_000_000_000_000_000n, 3_600_000_000_000_000_000n);
      const limiter = new SqliteRateLimiter(store.db);
      const refused = await limiter.consume('budget', 1000, HOUR, 1, NOW);
      assert.deepEqual(refused, { allowed: false, limit: 1000, remaining: 0, resetMs: HOUR, retryAfterMs: 3600 });
      const row = store.db.prepare('SELECT tat_ms, expires_ms FROM rate_limits WHERE key = ?').get('budget');
      assert.deepEqual({ ...(row as object) }, { tat_ms: NOW + HOUR, expires_ms: NOW + HOUR });
      // A settlement of such a row repairs it too, and the key is usable again as its debt is repaid.
      store.db.prepare('UPDATE rate_limits SET tat_ms = ? WHERE key = ?').run(9_000_000_000_000_000_000n, 'budget');
      await limiter.adjust('budget', 1000, HOUR, -10, NOW);
      assert.equal((await limiter.consume('budget', 1000, HOUR, 1, NOW + 37_000)).allowed, true);
    } finally {
      await store.close();
    }
  });

  test('SQLite: a file locked past the busy timeout is a StoreOutageError; a bad number is not', async () => {
    const temp = tempDir();
    const store = await openSqliteStore(temp.dir);
    const second = await openDatabase(join(temp.dir, 'gateway.db'), 20);
    try {
      const limiter = new SqliteRateLimiter(second);
      store.db.exec('BEGIN IMMEDIATE');
      const outage = await limiter.consume('k', 10, HOUR, 1, NOW).then(
        () => undefined,
        (error: unknown) => error,
      );
      store.db.exec('ROLLBACK');
      assert.ok(outage instanceof StoreOutageError, `got ${String(outage)}`);
      assert.equal((outage.cause as { errcode?: number }).errcode, 5, 'SQLITE_BUSY');
      await assert.rejects(limiter.consume('k', 10, HOUR, Number.POSITIVE_INFINITY, NOW), (error: unknown) => {
        assert.ok(error instanceof RangeError && !(error instanceof StoreOutageError));
        return true;
      });
      assert.equal((await limiter.consume('k', 10, HOUR, 1, NOW)).allowed, true, 'usable once the lock is gone');
    } finally {
      second.close();
      await store.close();
      temp.remove();
    }
  });

  test('Redis: values that are not numbers, or past the ceiling, are repaired; no "ERR value is not an integer"', async (t: TestContext) => {
    if (skip) return t.skip(skip);
    const prefix = testPrefix();
    const client = await connectRedis(REDIS_URL);
    try {
      const limiter = new RedisRateLimiter(client, { prefix });
      for (const [key, stored] of [
        ['big', '3600000000000000000'],
        ['text', 'garbage'],
        ['inf', 'inf'],
        ['nan', 'nan'],
        ['exp', '3.6e+18'],
      ] as const) {
        await client.set(`${prefix}rl:${key}`, stored);
        const refused = await limiter.consume(key, 1000, HOUR, 1, NOW);
        assert.equal(refused.allowed, false, key);
        assert.equal(refused.retryAfterMs, 3600, key);
        assert.equal(
          await client.get(`${prefix}rl:${key}`),
          String(NOW + HOUR),
          `${key}: written back as a whole number`,
        );
        const ttl = await client.pttl(`${prefix}rl:${key}`);
        assert.ok(ttl > 0 && ttl <= HOUR, `${key}: expires by itself (${ttl} ms)`);
      }
      await client.set(`${prefix}rl:settled`, '1e300');
      await limiter.adjust('settled', 1000, HOUR, -10, NOW);
      assert.equal(await client.get(`${prefix}rl:settled`), String(NOW + HOUR - 36_000));
      // The charge of 1e15 tokens that made Redis answer "ERR value is not an integer or out of range":
      const huge = { kind: 'rate' as const, key: 'huge', limit: 1000, windowMs: HOUR, cost: 1e15, need: 1 };
      assert.equal((await limiter.admit([huge], 'r', NOW)).admitted, true);
      assert.equal(await client.get(`${prefix}rl:huge`), String(NOW + 1000 * HOUR));
    } finally {
      await deleteKeys(client, prefix);
      await client.quit();
    }
  });

  test('Redis: a server that cannot be reached is a StoreOutageError', async () => {
    const client = await connectRedis('redis://127.0.0.1:1', { connectTimeoutMs: 200 });
    try {
      const limiter = new RedisRateLimiter(client, { prefix: testPrefix() });
      await assert.rejects(limiter.consume('k', 10, HOUR, 1, NOW), StoreOutageError);
    } finally {
      client.disconnect();
    }
  });
});

/** Starts `jobs.length` worker processes, releases them together, and returns how many units each was allowed. */
async function runWorkers(jobs: WorkerJob[]): Promise<number[]> {
  const workers = jobs.map((job) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(job)], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const ready = new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.startsWith('ready\n')) resolve();
      });
      child.once('exit', () => reject(new Error(`worker exited before it was ready: ${stderr}`)));
    });
    const done = new Promise<number>((resolve, reject) => {
      child.once('exit', (code) => {
        const last = stdout.trim().split('\n').at(-1) ?? '';
        if (code !== 0 || !last.startsWith('{')) reject(new Error(`worker failed (exit ${code}): ${stderr}`));
        else resolve((JSON.parse(last) as { allowed: number }).allowed);
      });
    });
    return { child, ready, done };
  });
  try {
    await Promise.all(workers.map((w) => w.ready));
  } catch (error) {
    for (const w of workers) w.child.kill();
    await Promise.allSettled(workers.map((w) => w.done));
    throw error;
  }
  for (const w of workers) w.child.stdin.end('go\n');
  return Promise.all(workers.map((w) => w.done));
}

describe('cross-process: separate OS processes on one key admit exactly the limit', () => {
  // One fixed clock for all, so nothing refills. A SQLite decision takes microseconds, so that run needs a larger
  // limit for the two processes to overlap at all; Redis round trips interleave them on their own.
  const base = { key: 'shared', windowMs: 60_000, parallel: 4, nowMs: 1_700_000_000_000 };

  async function hammer(t: TestContext, job: WorkerJob): Promise<void> {
    const allowed = await runWorkers([job, job]);
    t.diagnostic(`allowed per process: ${allowed.join(' + ')}`);
    // Each process asks for more than the whole limit: had they run one after the other, the first would have
    // taken everything and the second nothing. Both admitted some, so their decisions interleaved on the key.
    for (const [i, n] of allowed.entries())
      assert.ok(n > 0, `process ${i + 1} was admitted nothing: the processes did not overlap (${allowed.join(', ')})`);
    assert.equal(
      allowed.reduce((a, b) => a + b, 0),
      job.limit,
      `allowed per process: ${allowed.join(', ')}`,
    );
  }

  test('sqlite file shared by two processes', { timeout: 60_000 }, async (t) => {
    const temp = tempDir();
    try {
      const store = await openSqliteStore(temp.dir); // migrate once here; the workers open the same file
      await store.close();
      await hammer(t, { ...base, backend: 'sqlite', target: temp.dir, prefix: '', limit: 20000, attempts: 30000 });
    } finally {
      temp.remove();
    }
  });

  test('redis shared by two processes', { skip, timeout: 60_000 }, async (t) => {
    const prefix = testPrefix();
    try {
      await hammer(t, { ...base, backend: 'redis', target: REDIS_URL, prefix, limit: 150, attempts: 400 });
    } finally {
      const client = await connectRedis(REDIS_URL);
      await deleteKeys(client, prefix);
      await client.quit();
    }
  });
});
