/**
 * Ingestion survives a kill -9 (issue 44, docs/retrieval.md "Restart-safe"): 200 files are added to a store in one
 * batch, the real gateway process is killed (SIGKILL) while it ingests them, and started again on the same data
 * folder. Every file ends `completed`, each file's one chunk is stored once, and a search for a word only one file
 * holds finds that file once.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import OpenAI, { toFile } from 'openai';
import { killAllGateways, makeTempDir, removeTempDirs, startGatewayProcess } from '../../helpers/spawn-gateway.js';
import { startWordEmbedder, type WordEmbedder } from '../../helpers/upstreams/word-embedder.js';
import { waitFor, waitForValue } from '../../helpers/wait.js';

const TOKEN = 'ingest-restart-admin-token-0123456789';
const FILES = 200;

describe('vector store ingestion across a kill -9 and a restart', () => {
  let embedder: WordEmbedder;
  let dataDir: string;
  let configFile: string;
  const env = () => ({
    GATEWAY_ENV: 'prod',
    ADMIN_TOKEN: TOKEN,
    UPSTREAM_BASE_URL: embedder.baseUrl,
    GATEWAY_CONFIG: configFile,
    LOG_LEVEL: 'warn',
  });
  before(async () => {
    embedder = await startWordEmbedder({ dimensions: 32, delayMs: 15 });
    dataDir = makeTempDir('gw-ingest-restart-');
    configFile = join(dataDir, 'gateway.yaml');
    writeFileSync(
      configFile,
      // A killed runner's claims run out after a second; the restarted process then takes its files over.
      ['vector_stores:', '  ingest_concurrency: 4', '  poll_ms: 20', '  lease_seconds: 1'].join('\n'),
    );
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
    await embedder.close();
  });

  test('every file completed once, each chunk stored once', { timeout: 180_000 }, async (t) => {
    let gw = await startGatewayProcess({ env: env(), dataDir });
    const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: TOKEN, maxRetries: 0 });
    let openai = client(gw.url);
    const store = await openai.vectorStores.create({ name: 'two hundred' });
    const ids: string[] = [];
    for (let i = 0; i < FILES; i++) {
      const file = await openai.files.create({
        file: await toFile(Buffer.from(`Document ${i} mentions the word marker${i} and nothing else.`), `doc-${i}.txt`),
        purpose: 'assistants',
      });
      ids.push(file.id);
    }
    await openai.vectorStores.fileBatches.create(store.id, { file_ids: ids });
    await waitFor('a fifth of the files embedded', () => embedder.embedded() >= FILES / 5, 60_000);
    gw.signal('SIGKILL');
    await gw.waitForExit(10_000);
    const atKill = embedder.embedded();
    assert.ok(atKill < FILES, `ingestion was not cut: ${atKill} files embedded before the kill`);

    gw = await startGatewayProcess({ env: env(), dataDir });
    openai = client(gw.url);
    const ended = await waitForValue(
      'every file completed',
      () => openai.vectorStores.retrieve(store.id),
      (s) => s.file_counts.in_progress === 0,
      120_000,
    );
    assert.deepEqual(ended.file_counts, { in_progress: 0, completed: FILES, failed: 0, cancelled: 0, total: FILES });
    assert.equal(ended.status, 'completed');

    // Each file's one chunk is stored once: in the chunks table, and as the search sees them.
    const db = new DatabaseSync(join(dataDir, 'gateway.db'), { readOnly: true });
    try {
      const rows = db
        .prepare('SELECT file_id, COUNT(*) AS n FROM vector_chunks WHERE store_id = ? GROUP BY file_id')
        .all(store.id) as { file_id: string; n: number }[];
      assert.equal(rows.length, FILES);
      assert.ok(
        rows.every((r) => Number(r.n) === 1),
        JSON.stringify(rows.filter((r) => Number(r.n) !== 1)),
      );
    } finally {
      db.close();
    }
    for (const i of [0, 57, 199]) {
      // Full-text ranking alone (the word embedder's 32 buckets collide across 200 files; the words do not).
      const found = await openai.vectorStores.search(store.id, {
        query: `marker${i}`,
        max_num_results: 50,
        ranking_options: { hybrid_search: { embedding_weight: 0, text_weight: 1 } },
      } as OpenAI.VectorStores.VectorStoreSearchParams);
      assert.equal(found.data[0]?.file_id, ids[i]);
      const keys = found.data.map((r) => `${r.file_id}:${r.content[0]?.text}`);
      assert.equal(new Set(keys).size, keys.length, 'no chunk twice in the results');
    }
    t.diagnostic(`${atKill} of ${FILES} files embedded before the kill; ${embedder.embedded()} embeddings in all`);
    await gw.kill();
  });
});
