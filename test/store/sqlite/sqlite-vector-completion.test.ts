/**
 * A big file completed on the embedded vector store: staged a slice per transaction (the event loop served in
 * between), invisible to every search until it is published whole; stopped when the file is taken away; the rows
 * of a dead holder's staging collected by the sweep.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openSqliteStore, type SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { SqliteVectors } from '../../../src/store/sqlite/sqlite-vectors.js';
import { STAGE_SLICE } from '../../../src/store/sqlite/sqlite-vector-completion.js';
import { MAX_STAGINGS } from '../../../src/store/sqlite/sqlite-vector-chunks.js';
import type { NewChunk, VectorStoreRecord } from '../../../src/store/vector-contract.js';
import { setImmediate as nextTurn } from 'node:timers/promises';

const chunking = { maxTokens: 800, overlapTokens: 400 };

function chunksOf(word: string, count: number, offset: number): NewChunk[] {
  return Array.from({ length: count }, (_, seq) => ({
    seq,
    text: `${word} ${seq}`,
    tokens: 2,
    vector: Float32Array.from({ length: 8 }, (_, j) => Math.sin((seq + offset) * 0.7 + j)),
  }));
}

async function setUp(): Promise<{
  sqlite: SqliteStore;
  store: SqliteVectors;
  record: () => Promise<VectorStoreRecord>;
}> {
  const sqlite = await openSqliteStore(':memory:');
  const store = new SqliteVectors(sqlite.db);
  await store.createStore({
    id: 'vs_1',
    owner: 'alice',
    principal: '{}',
    name: 'n',
    metadata: null,
    createdMs: 1,
    lastActiveMs: 1,
    expiresAfterDays: null,
    embeddingModel: 'm',
    dimensions: null,
    metric: 'cosine',
    index: 'flat',
  });
  return { sqlite, store, record: async () => (await store.getStore('alice', 'vs_1'))! };
}

async function addAndClaim(store: SqliteVectors, fileId: string, holder: string, nowMs = 1): Promise<void> {
  await store.addFiles([
    {
      storeId: 'vs_1',
      fileId,
      owner: 'alice',
      batchId: null,
      filename: fileId,
      createdMs: 1,
      attributes: {},
      chunking,
    },
  ]);
  const claimed = await store.claimFiles(holder, 1000, 100, nowMs);
  assert.ok(claimed.some((c) => c.file.fileId === fileId));
}

const staged = (sqlite: SqliteStore) =>
  sqlite.db.prepare('SELECT count(*) FROM vector_chunks WHERE live = 0').pluck().get() as number;

/** Looks every turn of the event loop (a slice is written per turn): a timer could miss a fast staging whole. */
async function untilStaged(sqlite: SqliteStore, rows: number): Promise<void> {
  for (let turn = 0; turn < 100_000; turn++) {
    if (staged(sqlite) >= rows) return;
    await nextTurn();
  }
  assert.fail(`never ${rows} rows staged`);
}

test('a file of many chunks is staged invisibly, a slice per turn, and published whole', async (t) => {
  const { sqlite, store, record } = await setUp();
  try {
    await addAndClaim(store, 'file-a', 'h');
    assert.equal((await store.completeFile('vs_1', 'file-a', 'h', chunksOf('alpha', 3, 0))).kind, 'completed');
    await addAndClaim(store, 'file-b', 'h');
    const big = chunksOf('bravo', STAGE_SLICE * 100, 1000);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    t.after(() => clearInterval(timer));
    const completing = store.completeFile('vs_1', 'file-b', 'h', big);
    await untilStaged(sqlite, STAGE_SLICE * 2);
    // Mid-staging: the closest vector is a staged one, yet only file-a's are found; nor its text, nor its chunks.
    const during = await store.nearest({ store: await record(), vector: big[5]!.vector, k: 10 });
    assert.deepEqual(
      during.map((hit) => hit.fileId),
      ['file-a', 'file-a', 'file-a'],
    );
    assert.deepEqual(await store.matchText({ storeId: 'vs_1', text: 'bravo', k: 5 }), []);
    assert.deepEqual(await store.fileChunks('alice', 'vs_1', 'file-b'), []);
    assert.equal((await store.getFile('alice', 'vs_1', 'file-b'))?.status, 'in_progress');
    const outcome = await completing;
    clearInterval(timer);
    assert.equal(outcome.kind, 'completed');
    assert.ok(ticks >= 2, `the event loop was served while it was written (${ticks} ticks)`);
    assert.equal(staged(sqlite), 0);
    const after = await store.nearest({ store: await record(), vector: big[5]!.vector, k: 10 });
    assert.equal(after.length, 10);
    assert.deepEqual(after[0] && [after[0].fileId, after[0].seq], ['file-b', 5]);
    assert.equal((await store.fileChunks('alice', 'vs_1', 'file-b'))?.length, big.length);
    assert.equal(sqlite.db.prepare('SELECT count(*) FROM vector_stagings').pluck().get(), 0);
  } finally {
    await sqlite.close();
  }
});

test('a staging stops when the file is taken over, its rows dropped; the new holder completes it once', async () => {
  const { sqlite, store, record } = await setUp();
  try {
    await addAndClaim(store, 'file-c', 'old');
    const first = store.completeFile('vs_1', 'file-c', 'old', chunksOf('charlie', STAGE_SLICE * 100, 0));
    await untilStaged(sqlite, STAGE_SLICE);
    const taken = await store.claimFiles('new', 1000, 10, 10_000); // the old lease (until 1,001) ran out
    assert.deepEqual(
      taken.map((c) => c.file.fileId),
      ['file-c'],
    );
    assert.deepEqual(await first, { kind: 'lost' });
    assert.equal(staged(sqlite), 0, "the lost staging's rows are dropped");
    const second = await store.completeFile('vs_1', 'file-c', 'new', chunksOf('charlie', STAGE_SLICE * 3, 0));
    assert.equal(second.kind, 'completed');
    const hits = await store.nearest({ store: await record(), vector: chunksOf('x', 1, 0)[0]!.vector, k: 1000 });
    assert.equal(hits.length, STAGE_SLICE * 3, 'each chunk once');
  } finally {
    await sqlite.close();
  }
});

test("a dead holder's staged rows stay hidden and are collected by the sweep; a full store completes at once", async () => {
  const { sqlite, store, record } = await setUp();
  try {
    await addAndClaim(store, 'file-d', 'h');
    assert.equal((await store.completeFile('vs_1', 'file-d', 'h', chunksOf('delta', 2, 0))).kind, 'completed');
    // A holder died after staging one chunk of file-e (rows and vector written by hand, as it left them).
    await addAndClaim(store, 'file-e', 'dead');
    const gen = sqlite.db
      .prepare(
        "INSERT INTO vector_stagings (store_id, file_id, holder, dimensions) VALUES ('vs_1', 'file-e', 'dead', 8) RETURNING gen",
      )
      .pluck()
      .get() as number;
    const id = sqlite.db
      .prepare(
        "INSERT INTO vector_chunks (store_id, file_id, seq, text, tokens, live) VALUES ('vs_1', 'file-e', 0, 'echo', 1, 0) RETURNING id",
      )
      .pluck()
      .get() as number;
    const vector = Float32Array.from({ length: 8 }, () => 1);
    sqlite.db
      .prepare(
        "INSERT INTO vec_d8_cosine (chunk_id, store_id, file_id, gen, embedding) VALUES (?, 'vs_1', 'file-e', ?, ?)",
      )
      .run(BigInt(id), BigInt(gen), new Uint8Array(vector.buffer));
    assert.deepEqual(
      (await store.nearest({ store: await record(), vector, k: 1 })).map((hit) => hit.fileId),
      ['file-d'],
      'hidden inside the KNN: the one result is a live chunk',
    );
    await store.sweepExpired(2, 10);
    assert.equal(
      sqlite.db.prepare('SELECT count(*) FROM vector_stagings').pluck().get(),
      1,
      'its holder may still run',
    );
    await store.endFile('vs_1', 'file-e', 'dead', 'failed', { code: 'server_error', message: 'gone' });
    await store.sweepExpired(3, 10);
    assert.equal(sqlite.db.prepare('SELECT count(*) FROM vector_stagings').pluck().get(), 0);
    assert.equal(staged(sqlite), 0);
    assert.equal(sqlite.db.prepare('SELECT count(*) FROM vec_d8_cosine WHERE file_id = ?').pluck().get('file-e'), 0);

    // MAX_STAGINGS stagings already (abandoned ones): the next file is completed in one transaction.
    for (let i = 0; i < MAX_STAGINGS; i++)
      sqlite.db
        .prepare("INSERT INTO vector_stagings (store_id, file_id, holder, dimensions) VALUES ('vs_1', ?, 'x', 8)")
        .run(`ghost-${i}`);
    await addAndClaim(store, 'file-f', 'h');
    const big = chunksOf('foxtrot', STAGE_SLICE * 2, 500);
    assert.equal((await store.completeFile('vs_1', 'file-f', 'h', big)).kind, 'completed');
    assert.equal(staged(sqlite), 0);
    const hits = await store.nearest({ store: await record(), vector: big[3]!.vector, k: 1 });
    assert.deepEqual(hits[0] && [hits[0].fileId, hits[0].seq], ['file-f', 3]);
  } finally {
    await sqlite.close();
  }
});
