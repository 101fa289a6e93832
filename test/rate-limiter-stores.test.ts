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
import { connectRedis, type RedisClient } from '../src/store/redis/connect.js';
import { RedisRateLimiter } from '../src/store/redis/redis-rate-limiter.js';
import { SqliteRateLimiter } from '../src/store/sqlite/sqlite-rate-limiter.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { WorkerJob } from './fixtures/rate-limit-worker.js';
import { REDIS_URL, redisSkipReason } from './helpers/services.js';
import { rateLimiterContract } from './store-contract/rate-limiter-contract.js';

const skip = await redisSkipReason();
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WORKER = fileURLToPath(new URL('./fixtures/rate-limit-worker.ts', import.meta.url));

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
