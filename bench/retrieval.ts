// Retrieval benchmark (issue 44; docs/retrieval.md, docs/benchmarks.md "Retrieval"): ingestion through the real
// gateway (files parsed, chunked and embedded through its own embeddings route by a local word-embedding mock, then
// stored), and the vector store engines' search at 10,000 and 100,000 chunks for each backend and index type, with
// the process's memory. Run alone (npm run bench:retrieval) or as the last section of npm run bench.
//   BENCH_RETRIEVAL_SIZES=10000,100000  BENCH_RETRIEVAL_DIMS=384  BENCH_RETRIEVAL_QUERIES=200
//   BENCH_RETRIEVAL_FILES=40 (ingestion)  DATABASE_URL (PostgreSQL; default the local test database, skipped if absent)
//   BENCH_RETRIEVAL_BACKENDS=sqlite,postgres  BENCH_RETRIEVAL_INDEXES=flat,hnsw (a subset: one row re-measured)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config/load.js';
import { openDependencies } from '../src/dependencies.js';
import { createLogger } from '../src/observability/logger.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { SqliteVectors } from '../src/store/sqlite/sqlite-vectors.js';
import type { VectorIndexKind, VectorStoreRecord, VectorStoreStore } from '../src/store/vector-contract.js';
import { scratchPostgresSchema } from '../test/helpers/scratch-postgres-schema.js';
import { DATABASE_URL } from '../test/helpers/services.js';
import { startWordEmbedder } from '../test/helpers/upstreams/word-embedder.js';
import { summarize } from './lib/stats.js';

const env = process.env;
const SIZES = (env.BENCH_RETRIEVAL_SIZES ?? '10000,100000').split(',').map(Number);
const DIMS = Number(env.BENCH_RETRIEVAL_DIMS ?? 384);
const QUERIES = Number(env.BENCH_RETRIEVAL_QUERIES ?? 200);
const INGEST_FILES = Number(env.BENCH_RETRIEVAL_FILES ?? 40);
const BACKENDS = (env.BENCH_RETRIEVAL_BACKENDS ?? 'sqlite,postgres').split(',');
const INDEXES = (env.BENCH_RETRIEVAL_INDEXES ?? 'flat,hnsw').split(',') as VectorIndexKind[];
const CHUNKS_PER_FILE = 1_000;
const K = 10;
const ADMIN = 'bench-retrieval-admin-token-0123456789';

const log = (line: string) => process.stderr.write(`${line}\n`);
const mb = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MB`;
const fixed = (x: number, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');

/** The intrinsic dimension of the benchmark's vectors (see `vectors`). */
const INTRINSIC = 32;

/**
 * Deterministic pseudo-random unit vectors shaped as embeddings are: points of a 32-dimensional Gaussian mapped into
 * DIMS dimensions by one fixed random projection, plus noise of 10 % of their norm, then normalized. Uniformly random
 * vectors would have no structure for any index to use (HNSW's recall on them is ~0.6 at these parameters; every
 * point is about as far as every other), which is not what an embedding model returns.
 */
function vectors(seed: number) {
  const uniform = (start: number) => {
    let state = start >>> 0 || 1;
    return () => {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      return (state >>> 0) / 0x100000000;
    };
  };
  const gaussians = (next: () => number) => () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
  const fixed = gaussians(uniform(0x5eed));
  const projection = Float32Array.from({ length: DIMS * INTRINSIC }, fixed);
  const normal = gaussians(uniform(seed));
  const noise = 0.1 * Math.sqrt(INTRINSIC);
  return (): Float32Array => {
    const z = Array.from({ length: INTRINSIC }, normal);
    const v = new Float32Array(DIMS);
    let norm = 0;
    for (let i = 0; i < DIMS; i++) {
      let x = noise * normal();
      for (let j = 0; j < INTRINSIC; j++) x += projection[i * INTRINSIC + j]! * z[j]!;
      v[i] = x;
      norm += x * x;
    }
    norm = Math.sqrt(norm);
    for (let i = 0; i < DIMS; i++) v[i]! /= norm;
    return v;
  };
}

interface Backend {
  name: string;
  open(): Promise<{ store: VectorStoreStore; close(): Promise<void> }>;
}

const sqliteBackend: Backend = {
  name: 'embedded (SQLite + sqlite-vec)',
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'bench-vectors-'));
    const sqlite = await openSqliteStore(dir);
    const store = new SqliteVectors(sqlite.db);
    return {
      store,
      close: async () => {
        await store.close();
        await sqlite.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const postgresBackend: Backend = {
  name: 'PostgreSQL (no pgvector)',
  async open() {
    const schema = await scratchPostgresSchema();
    const { PostgresVectors } = await import('../src/store/postgres/postgres-vectors.js');
    const store = await PostgresVectors.open(schema.url);
    return {
      store,
      close: async () => {
        await store.close();
        await schema.drop();
      },
    };
  },
};

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

/** Fills a store with `size` chunks of random unit vectors, through the contract's own write path. */
async function fill(store: VectorStoreStore, record: VectorStoreRecord, size: number): Promise<number> {
  const random = vectors(size);
  const started = performance.now();
  for (let f = 0; f * CHUNKS_PER_FILE < size; f++) {
    const fileId = `file-bench${String(f).padStart(20, '0')}`;
    const count = Math.min(CHUNKS_PER_FILE, size - f * CHUNKS_PER_FILE);
    await store.addFiles([
      {
        storeId: record.id,
        fileId,
        owner: record.owner,
        batchId: null,
        filename: `f${f}.txt`,
        createdMs: Date.now(),
        attributes: { part: f % 10 },
        chunking: { maxTokens: 800, overlapTokens: 400 },
      },
    ]);
    const claimed = await store.claimFiles('bench', 600_000, 1, Date.now());
    if (claimed.length !== 1) throw new Error('the file was not claimed');
    const chunks = Array.from({ length: count }, (_, seq) => ({
      seq,
      text: `chunk ${f}/${seq}`,
      tokens: 3,
      vector: random(),
    }));
    const outcome = await store.completeFile(record.id, fileId, 'bench', chunks);
    if (outcome.kind !== 'completed') throw new Error(`completeFile: ${outcome.kind}`);
  }
  return (size / (performance.now() - started)) * 1000;
}

async function engineRow(backend: Backend, size: number, index: VectorIndexKind): Promise<string> {
  const opened = await backend.open();
  try {
    const { store } = opened;
    if (!store.capabilities.indexes.includes(index)) {
      return `| ${backend.name} | ${index} | ${size.toLocaleString('en')} | not built by this backend here (${store.capabilities.indexes.join(', ')} only) | | | | |`;
    }
    const nowMs = Date.now();
    const record = await store.createStore({
      id: `vs_bench${String(size).padStart(20, '0')}`,
      owner: 'admin',
      principal: '{}',
      name: 'bench',
      metadata: null,
      createdMs: nowMs,
      lastActiveMs: nowMs,
      expiresAfterDays: null,
      embeddingModel: 'bench-embedder',
      dimensions: DIMS,
      metric: 'cosine',
      index,
    });
    log(`  ${backend.name}: writing ${size} chunks of ${DIMS} dimensions…`);
    const writeRate = await fill(store, record, size);
    const loaded = (await store.getStore('admin', record.id))!;
    const queries = vectors(7);
    const one = async (fileIds?: readonly string[]) => {
      const vector = queries();
      const started = performance.now();
      const hits = await store.nearest({ store: loaded, vector, k: K, ...(fileIds ? { fileIds } : {}) });
      const ms = performance.now() - started;
      if (hits.length !== K) throw new Error(`${hits.length} hits, not ${K}`);
      return ms;
    };
    // hnsw: the graph built now (searches meanwhile are exact), timed; its recall@10 measured against the same
    // store searched as flat (the same chunks, every vector compared) for the same queries.
    let build = '';
    if (index === 'hnsw') {
      const started = performance.now();
      if (!(await store.indexReady?.(loaded))) throw new Error('the hnsw graph was not built');
      build = `, graph built in ${fixed((performance.now() - started) / 1000)} s`;
    }
    for (let i = 0; i < 5; i++) await one(); // warm (the PostgreSQL cache, sqlite's pages)
    const plain: number[] = [];
    for (let i = 0; i < QUERIES; i++) plain.push(await one());
    const files = (await store.searchableFiles(record.id)).filter((f) => f.attributes.part === 3).map((f) => f.fileId);
    const filtered: number[] = [];
    for (let i = 0; i < Math.min(QUERIES, 50); i++) filtered.push(await one(files));
    const a = summarize(plain);
    const b = summarize(filtered);
    const rss = process.memoryUsage().rss;
    let recall = 'exact (1.0)';
    if (index === 'hnsw') {
      const asFlat = { ...loaded, index: 'flat' as const };
      const measure = async (fileIds?: readonly string[]) => {
        const again = vectors(7);
        let found = 0;
        const n = Math.min(QUERIES, 100);
        for (let i = 0; i < n; i++) {
          const vector = again();
          const want = await store.nearest({ store: asFlat, vector, k: K, ...(fileIds ? { fileIds } : {}) });
          const got = await store.nearest({ store: loaded, vector, k: K, ...(fileIds ? { fileIds } : {}) });
          const keys = new Set(got.map((hit) => `${hit.fileId}:${hit.seq}`));
          found += want.filter((hit) => keys.has(`${hit.fileId}:${hit.seq}`)).length;
        }
        return found / (n * K);
      };
      recall = `${fixed(await measure(), 3)} (filtered ${fixed(await measure(files), 3)})${build}`;
    }
    return `| ${backend.name} | ${index} | ${size.toLocaleString('en')} | ${fixed(a.p50, 2)} / ${fixed(a.p99, 2)} | ${fixed(b.p50, 2)} / ${fixed(b.p99, 2)} | ${Math.round(writeRate).toLocaleString('en')} | ${mb(rss)} | ${recall} |`;
  } finally {
    await opened.close();
  }
}

/** Files through the real gateway: uploaded, added as one batch, ingested (parsed, chunked, embedded, stored). */
async function ingestionRow(): Promise<string> {
  const embedder = await startWordEmbedder({ dimensions: DIMS });
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-ingest-'));
  const config = loadConfig(
    {
      GATEWAY_ENV: 'dev',
      ADMIN_TOKEN: ADMIN,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      UPSTREAM_BASE_URL: embedder.baseUrl,
      UPSTREAM_API_KEY: 'sk-bench-embedder',
    },
    { version: 'bench' },
  );
  const logger = createLogger({ level: 'warn', secrets: [ADMIN], destination: { write: () => undefined } });
  const deps = await openDependencies(config, logger);
  const gateway = await buildApp(deps);
  await gateway.app.listen({ host: '127.0.0.1', port: 0 });
  const address = gateway.app.server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const headers = { authorization: `Bearer ${ADMIN}` };
  try {
    const json = async (path: string, init: RequestInit = {}) => {
      const response = await fetch(`${base}${path}`, { ...init, headers: { ...headers, ...init.headers } });
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
      return (await response.json()) as Record<string, unknown>;
    };
    const words = 'gateway latency retrieval vector store chunk token embedding search citation answer model'.split(
      ' ',
    );
    const ids: string[] = [];
    for (let f = 0; f < INGEST_FILES; f++) {
      const text = Array.from({ length: 6_000 }, (_, i) => `${words[(i * 7 + f) % words.length]}${i % 97}`).join(' ');
      const form = new FormData();
      form.set('purpose', 'assistants');
      form.set('file', new Blob([text]), `doc-${f}.txt`);
      ids.push(String((await json('/v1/files', { method: 'POST', body: form })).id));
    }
    const store = await json('/v1/vector_stores', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ingest' }),
    });
    const started = performance.now();
    await json(`/v1/vector_stores/${String(store.id)}/file_batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ file_ids: ids }),
    });
    for (;;) {
      const current = await json(`/v1/vector_stores/${String(store.id)}`);
      const counts = current.file_counts as { in_progress: number; completed: number };
      if (counts.in_progress === 0) {
        if (counts.completed !== INGEST_FILES) throw new Error(`ingestion: ${JSON.stringify(counts)}`);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    let chunks = 0;
    for (const id of ids) {
      const content = await json(`/v1/vector_stores/${String(store.id)}/files/${id}/content`);
      chunks += (content.data as unknown[]).length;
    }
    return `${INGEST_FILES} text files (${chunks.toLocaleString('en')} chunks of 800 tokens, overlap 400, ${DIMS} dimensions) in ${fixed(seconds, 2)} s: **${Math.round(chunks / seconds).toLocaleString('en')} chunks/s**, ${fixed(INGEST_FILES / seconds)} files/s (ingest_concurrency ${config.vectorStores.ingestConcurrency}, ${config.vectorStores.embedBatchSize} chunks per embeddings call, ${embedder.requests.length} calls); RSS ${mb(process.memoryUsage().rss)}`;
  } finally {
    await gateway.app.close();
    await deps.close();
    await embedder.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function retrievalSection(): Promise<string> {
  log('retrieval: ingestion through the gateway…');
  const ingestion = await ingestionRow();
  const backends = BACKENDS.includes('sqlite') ? [sqliteBackend] : [];
  const notes: string[] = [];
  if (!BACKENDS.includes('postgres')) notes.push('PostgreSQL not asked for (BENCH_RETRIEVAL_BACKENDS).');
  else if (await postgresReachable()) backends.push(postgresBackend);
  else notes.push(`PostgreSQL not reachable at ${DATABASE_URL.replace(/\/\/[^@]*@/, '//')}: its rows are missing.`);
  const rows: string[] = [];
  for (const backend of backends) {
    for (const size of SIZES) {
      for (const index of INDEXES) {
        log(`retrieval: ${backend.name}, ${size} chunks, ${index}`);
        rows.push(await engineRow(backend, size, index));
      }
    }
  }
  return [
    `**Ingestion** (the real gateway, a local word-embedding mock with no delay): ${ingestion}.`,
    '',
    `**Search** (the store's \`nearest\`, k = ${K}, ${DIMS}-dimensional unit vectors of intrinsic dimension ${INTRINSIC}, cosine; ${QUERIES} queries after 5 to warm; "filtered": restricted to the files a filter kept, 10 % of them; hnsw: M 16, efConstruction 64, efSearch 128, recall@10 against the same store searched exactly, over ${Math.min(QUERIES, 100)} queries):`,
    '',
    '| backend | index | chunks | search p50 / p99 ms | filtered p50 / p99 ms | write chunks/s | RSS after | recall@10 vs flat |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    ...notes.map((n) => `- ${n}`),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  retrievalSection().then(
    (markdown) => {
      process.stdout.write(`${markdown}\n`);
      process.exit(0);
    },
    (error: unknown) => {
      log(`retrieval bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      process.exit(1);
    },
  );
}
