/**
 * A child process for test/store/sqlite/sqlite-gc-stress.test.ts: makes the garbage collector finalise SQLite statements in
 * every way the gateway can, then exits without closing the last database. Run with `--expose-gc`:
 *
 *   node --expose-gc --import tsx test/helpers/sqlite-gc-stress.ts <data dir> [statements] [rounds]
 *
 * better-sqlite3 12 on Node 24 aborted the process here (`Assertion failed: (env) != nullptr` in
 * node::RemoveEnvironmentCleanupHook, from Statement::~Statement() run by the collector): ADR 0005. Written
 * against the store's own API only (`store.db.prepare/pluck/transaction`, the stores' constructors), so the same
 * file ran unchanged against the better-sqlite3 build to show that it catches that abort.
 *
 * 1. Statements (writes, reads, plucked reads) prepared, used once and dropped, with a forced collection now and then.
 * 2. Statements outliving their database: it is closed under 2,000 of them, then they are collected.
 * 3. The stores under mixed load: each round builds new stores on the open database (new prepared statements;
 *    the previous round's become garbage) and runs admissions, settlements, idempotency claims, answers and
 *    releases, usage records, pauses and webhook events concurrently through the group commit; a collection
 *    between rounds.
 * 4. Exit with 2,000 statements never finalised and the database open: environment teardown finalises them.
 *
 * Prints one JSON line: what ran. Exit code 0 and an empty stderr mean no abort and no warning.
 */
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SqliteRateLimiter } from '../../src/store/sqlite/sqlite-rate-limiter.js';
import { SqliteIdempotencyStore } from '../../src/store/sqlite/sqlite-idempotency-store.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import { SqliteUpstreamPauses } from '../../src/store/sqlite/sqlite-upstream-pauses.js';
import { SqliteOutbox } from '../../src/store/sqlite/sqlite-outbox.js';
import type { UsageRecord } from '../../src/store/store-contract.js';

const [dataDir, statementsArg, roundsArg] = process.argv.slice(2);
if (!dataDir) throw new Error('usage: sqlite-gc-stress.ts <data dir> [statements] [rounds]');
const STATEMENTS = Number(statementsArg ?? 40_000);
const ROUNDS = Number(roundsArg ?? 8);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

const started = Date.now();
let collections = 0;
// A full collection, then a turn of the event loop, so that finalisers V8 defers to a task of their own run too.
const collect = async () => {
  gc();
  collections += 1;
  await new Promise((resolve) => setTimeout(resolve, 1));
};

// 1. Statements prepared, used once and dropped (writes, reads, plucked reads), in three patterns of collection:
//    V8's own only (some statements kept alive among the garbage), a forced one every 3,000 iterations followed by
//    a turn of the event loop, and a forced one every 3,000 without it. Which pattern made better-sqlite3 12 abort
//    on Node 24 varied from run to run (each did in 1 to 4 runs of 4 in a scratch harness); the three in a row did
//    in 18 runs of 20, so they run twice (ADR 0005).
let store: SqliteStore = await openSqliteStore(dataDir);
let opens = 1;
let sum = 0;
const patterns = ['v8-only', 'forced-then-yield', 'forced', 'v8-only', 'forced-then-yield', 'forced'] as const;
for (const pattern of patterns) {
  const alive: unknown[] = [];
  for (let i = 0; i < STATEMENTS; i++) {
    store.db
      .prepare<[string, string, string]>(
        `INSERT INTO gateway_meta (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value || '${i % 89}'`,
      )
      .run(`k${i % 64}`, String(i), '2026-11-23T00:00:00.000Z');
    sum += store.db.prepare<[number], { v: number }>(`SELECT ? + ${i % 997} AS v`).get(i)?.v ?? 0;
    if (i % 3 === 0)
      sum += Number(
        store.db
          .prepare<[], number>(`SELECT ${i % 13}`)
          .pluck()
          .get(),
      );
    if (pattern === 'v8-only' && i % 50 === 0) alive.push(store.db.prepare('SELECT COUNT(*) AS n FROM rate_limits'));
    if (pattern !== 'v8-only' && i % 3_000 === 2_999) {
      if (pattern === 'forced') {
        gc();
        collections += 1;
      } else {
        await collect();
      }
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 20));
  sum += alive.length;
}

// 2. Statements outliving their database: closed while 2,000 are referenced, then they are dropped and collected.
for (let cycle = 0; cycle < 4; cycle++) {
  const kept = Array.from({ length: 2_000 }, (_, i) =>
    store.db.prepare(`SELECT ${i} AS x, COUNT(*) AS n FROM rate_limits`),
  );
  sum += kept.length;
  await store.close();
  kept.length = 0;
  await collect();
  store = await openSqliteStore(dataDir);
  opens += 1;
}

// 3. The stores under mixed load, rebuilt every round.
const usage = (i: number, round: number): UsageRecord => ({
  timeMs: 1_800_000_000_000 + round * 10_000 + i,
  requestId: `r${round}-${i}`,
  caller: `key-${i % 7}`,
  environment: 'prod',
  route: 'chat',
  model: i % 5 === 0 ? null : 'gpt-4o-mini',
  upstream: 'default',
  status: i % 11 === 0 ? 429 : 200,
  code: i % 11 === 0 ? 'rate_limited' : null,
  latencyMs: 12.5,
  ttfbMs: i % 2 === 0 ? 3.25 : null,
  stream: i % 2 === 0,
  promptTokens: 10 + i,
  completionTokens: i % 3 === 0 ? null : 20,
  costUsd: 0.0001,
  attempts: 1,
  replay: false,
  cacheHit: false,
  usageAnomaly: false,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  cacheSavingsUsd: null,
});
let operations = 0;
for (let round = 0; round < ROUNDS; round++) {
  const limiter = new SqliteRateLimiter(store.db);
  const idempotency = new SqliteIdempotencyStore(store.db);
  const records = new SqliteUsageStore(store.db);
  const pauses = new SqliteUpstreamPauses(store.db);
  const outbox = new SqliteOutbox(store.db);
  const now = 1_800_000_000_000 + round * 60_000;
  const work: Array<Promise<unknown>> = [];
  for (let i = 0; i < 400; i++) {
    const token = `t${round}-${i}`;
    const limits = [
      { kind: 'rate' as const, key: `caller:${i % 9}`, limit: 1_000_000, windowMs: 60_000, cost: 1 },
      { kind: 'concurrency' as const, key: `inflight:${i % 9}`, max: 10_000, leaseMs: 30_000 },
    ];
    work.push(
      limiter.admit(limits, token, now + i).then(() =>
        limiter.settle(
          [
            { kind: 'rate', key: `caller:${i % 9}`, limit: 1_000_000, windowMs: 60_000, delta: -1 },
            { kind: 'concurrency', key: `inflight:${i % 9}` },
          ],
          token,
          now + i,
        ),
      ),
      idempotency.begin('caller', `k${round}-${i % 150}`, `fp${i % 2}`, 30_000, now + i).then((begun) => {
        if (begun.state !== 'claimed') return undefined;
        if (i % 3 === 0) return idempotency.abandon('caller', `k${round}-${i % 150}`, `fp${i % 2}`);
        const response = {
          status: 200,
          headers: { 'content-type': 'application/json' },
          kind: 'json' as const,
          body: `{"i":${i}}`,
          storedAt: new Date(now).toISOString(),
        };
        return idempotency.complete(
          { scope: 'caller', key: `k${round}-${i % 150}`, fingerprint: `fp${i % 2}` },
          response,
          60_000,
          now + i,
        );
      }),
    );
    if (i % 40 === 0) work.push(records.append(Array.from({ length: 60 }, (_, j) => usage(i * 60 + j, round))));
    if (i % 50 === 0)
      work.push(pauses.pause(`upstream-${i % 3}`, now + 5_000, now), pauses.pausedUntil(`upstream-${i % 3}`, now));
    if (i % 25 === 0)
      work.push(
        outbox.enqueue([{ id: `d${round}-${i}`, eventId: `e${round}-${i}`, subscription: 's', body: '{}' }], now),
      );
  }
  await Promise.all(work);
  operations += work.length;
  await records.summarize('model', 0, Number.MAX_SAFE_INTEGER);
  for (const delivery of await outbox.claim('s', 100, 1_000, now + 1)) await outbox.delivered(delivery.id, now + 2);
  await collect();
}

// 4. Statements left for environment teardown; the database stays open.
const leftOver: unknown[] = [];
for (let i = 0; i < 2_000; i++) leftOver.push(store.db.prepare(`SELECT ${i} AS x`));
await collect();
process.stdout.write(
  `${JSON.stringify({ node: process.version, statements: STATEMENTS, rounds: ROUNDS, operations, opens, collections, ms: Date.now() - started, ok: sum > 0 && leftOver.length === 2_000 })}\n`,
);
