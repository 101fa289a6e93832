/**
 * The idempotency stores: the shared contract against every backend (SQLite in memory, SQLite on a file, Redis),
 * then exactly-once claims across two OS processes sharing a backend, then what is particular to each backend.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { connectRedis, type RedisClient } from '../../src/store/redis/connect.js';
import { RedisIdempotencyStore } from '../../src/store/redis/redis-idempotency-store.js';
import { SqliteIdempotencyStore } from '../../src/store/sqlite/sqlite-idempotency-store.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { WorkerReport } from '../fixtures/idempotency-worker.js';
import { REDIS_URL, redisSkipReason } from '../helpers/services.js';
import { JSON_ANSWER, idempotencyContract, type ContractStore } from '../store-contract/idempotency-contract.js';
import { PROJECT_ROOT } from '../helpers/paths.js';

const skip = await redisSkipReason();
const ROOT = PROJECT_ROOT;
const WORKER = 'test/fixtures/idempotency-worker.ts';

function tempDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'gw-idem-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

async function makeSqlite(where: 'memory' | 'file'): Promise<ContractStore> {
  const temp = where === 'file' ? tempDir() : undefined;
  const sqlite = await openSqliteStore(temp?.dir ?? ':memory:');
  return {
    store: new SqliteIdempotencyStore(sqlite.db),
    close: async () => {
      await sqlite.close();
      temp?.remove();
    },
  };
}

/** Deletes every key under `prefix` (SCAN, not KEYS, as anywhere a shared Redis may be large). */
async function deleteKeys(client: RedisClient, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    if (found.length > 0) await client.del(...found);
    cursor = next;
  } while (cursor !== '0');
}

/** A Redis store under a random prefix of its own; closing it deletes its keys. */
async function makeRedis(): Promise<
  ContractStore & { client: RedisClient; prefix: string; redisStore: RedisIdempotencyStore }
> {
  const client = await connectRedis(REDIS_URL);
  const prefix = `test:idem:${randomUUID()}:`;
  const redisStore = new RedisIdempotencyStore(client, { prefix });
  return {
    store: redisStore,
    redisStore,
    client,
    prefix,
    close: async () => {
      await deleteKeys(client, prefix);
      await client.quit();
    },
  };
}

idempotencyContract('SQLite in memory', () => makeSqlite('memory'));
idempotencyContract('SQLite on a file (WAL)', () => makeSqlite('file'));
idempotencyContract('Redis', makeRedis, { skip });

// ---------------------------------------------------------------------------------------------------------------

interface Worker {
  ready: Promise<void>;
  report: Promise<WorkerReport>;
  go(): void;
}

/** Starts one worker process; `report` resolves with its JSON line once it exited with code 0. */
function startWorker(args: string[]): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, ...args], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const lines: string[] = [];
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  createInterface({ input: child.stdout }).on('line', (line) => {
    if (line === 'ready') markReady();
    else lines.push(line);
  });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const report = exited.then(([code, signal]) => {
    const last = lines.at(-1);
    if (code !== 0 || last === undefined)
      throw new Error(`worker exited ${String(code ?? signal)}; stderr:\n${stderr}`);
    return JSON.parse(last) as WorkerReport;
  });
  // A worker that dies before `ready` must fail the test, not hang it.
  const readyOrDead = Promise.race([
    ready,
    report.then(() => Promise.reject(new Error(`worker exited before ready:\n${stderr}`))),
  ]);
  return { ready: readyOrDead, report, go: () => child.stdin.end('go\n') };
}

const KEYS = 20;

/** Two processes begin the same 20 keys at once: for every key exactly one of them, in total, claims it. */
async function claimAcrossProcesses(args: string[]): Promise<void> {
  const workers = [startWorker(args), startWorker(args)];
  await Promise.all(workers.map((w) => w.ready));
  for (const w of workers) w.go();
  const reports = await Promise.all(workers.map((w) => w.report));
  for (const r of reports) assert.equal(r.states.length, KEYS);
  for (let i = 0; i < KEYS; i++) {
    const states = reports.map((r) => r.states[i]);
    assert.equal(states.filter((s) => s === 'claimed').length, 1, `key-${i}: ${states.join(', ')}`);
    assert.equal(states.filter((s) => s === 'in_progress').length, 1, `key-${i}: ${states.join(', ')}`);
  }
}

describe('idempotency across OS processes sharing one backend', () => {
  test('SQLite file: every key is claimed by exactly one of two processes', { timeout: 30_000 }, async () => {
    const temp = tempDir();
    try {
      (await openSqliteStore(temp.dir)).db.close(); // migrated once up front, so the workers only race on the keys
      await claimAcrossProcesses(['sqlite', temp.dir, '-', String(KEYS)]);
    } finally {
      temp.remove();
    }
  });

  test('Redis: every key is claimed by exactly one of two processes', { skip, timeout: 30_000 }, async () => {
    const { client, prefix, close } = await makeRedis();
    try {
      await claimAcrossProcesses(['redis', REDIS_URL, prefix, String(KEYS)]);
      assert.equal((await client.keys(`${prefix}*`)).length, KEYS, 'the workers used the test prefix');
    } finally {
      await close();
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('SQLite idempotency store', () => {
  test('expired rows are purged (completed past TTL, claims past lease); live ones stay', async () => {
    const sqlite = await openSqliteStore(':memory:');
    try {
      const store = new SqliteIdempotencyStore(sqlite.db);
      const t0 = 1_700_000_000_000;
      await store.begin('s', 'crashed', 'fp', 1_000, t0);
      await store.begin('s', 'done', 'fp', 1_000, t0);
      await store.complete({ scope: 's', key: 'done', fingerprint: 'fp' }, JSON_ANSWER, 2_000, t0 + 10);
      await store.begin('s', 'running', 'fp', 60_000, t0);
      assert.equal(store.purgeExpired(t0 + 999), 0);
      assert.equal(store.purgeExpired(t0 + 1_000), 1, 'the crashed claim');
      assert.equal(store.purgeExpired(t0 + 2_010), 1, 'the completed answer');
      const left = sqlite.db
        .prepare<[], object>('SELECT key, state FROM idempotency_keys')
        .all()
        .map((row) => ({ ...row })); // rows have a null prototype
      assert.deepEqual(left, [{ key: 'running', state: 'in_progress' }]);
    } finally {
      await sqlite.close();
    }
  });

  test('a closed database is a rejection, not a synchronous throw', async () => {
    const sqlite = await openSqliteStore(':memory:');
    const store = new SqliteIdempotencyStore(sqlite.db);
    await sqlite.close();
    const pending = store.begin('s', 'k', 'fp', 1_000);
    await assert.rejects(pending);
  });
});

describe('Redis idempotency store', { skip }, () => {
  test('one hash per key under the prefix, base64url parts, expiring with the row', async () => {
    const { client, prefix, redisStore, close } = await makeRedis();
    try {
      assert.equal(redisStore.redisKey('a:b', 'c'), `${prefix}YTpi:Yw`);
      assert.equal(redisStore.redisKey('a', 'b:c'), `${prefix}YQ:Yjpj`);
      await redisStore.begin('a:b', 'c', 'fp', 30_000);
      const key = redisStore.redisKey('a:b', 'c');
      assert.deepEqual(await client.hmget(key, 'fingerprint', 'state'), ['fp', 'in_progress']);
      const leaseTtl = await client.pttl(key);
      assert.ok(leaseTtl > 29_000 && leaseTtl <= 30_000, `PTTL ${leaseTtl} follows the lease`);
      await redisStore.complete({ scope: 'a:b', key: 'c', fingerprint: 'fp' }, JSON_ANSWER, 86_400_000);
      const answerTtl = await client.pttl(key);
      assert.ok(answerTtl > 86_399_000 && answerTtl <= 86_400_000, `PTTL ${answerTtl} follows the answer's TTL`);
      assert.equal(await client.hget(key, 'response'), JSON.stringify(JSON_ANSWER));
    } finally {
      await close();
    }
  });
});
