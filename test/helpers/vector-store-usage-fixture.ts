/**
 * Vector stores of two callers made through the real gateway (a word embedder on a socket embeds their chunks), for
 * the operators' views (the metrics, the dashboard): the admin's two stores (one file completed, one failed: it
 * holds no text), a scoped key's one store (one file completed), two searches that find and one of a store that
 * does not exist.
 */
import OpenAI, { toFile } from 'openai';
import { newApiKey } from '../../src/auth/api-key.js';
import { SqliteKeyStore } from '../../src/store/sqlite/sqlite-keys.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from './gateway.js';
import { startWordEmbedder, type WordEmbedder } from './upstreams/word-embedder.js';

export interface CallerUsage {
  caller: string;
  stores: number;
  files: number;
  failed: number;
  bytes: number;
}

export interface VectorStoreUsageFixture {
  gw: TestGateway;
  embedder: WordEmbedder;
  admin: CallerUsage;
  key: CallerUsage;
  close(): Promise<void>;
}

export async function startVectorStoreUsageFixture(): Promise<VectorStoreUsageFixture> {
  const embedder = await startWordEmbedder({ dimensions: 16 });
  const gw = await startGateway({
    env: { UPSTREAM_BASE_URL: embedder.baseUrl, UPSTREAM_API_KEY: 'sk-embedder-key-0123456789abcdef' },
  });
  const issued = newApiKey('dev');
  await new SqliteKeyStore(gw.store.db).create({
    keyId: issued.keyId,
    environment: 'dev',
    hash: issued.hash,
    name: 'vector-store-caller',
    routes: ['vector_stores', 'files', 'embeddings'],
    models: ['*'],
    createdMs: Date.now(),
  });
  const client = (apiKey: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0 });
  const admin = client(ADMIN_TOKEN);
  const key = client(issued.key);

  const add = async (as: OpenAI, storeId: string, name: string, text: string) => {
    const file = await as.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'assistants' });
    return as.vectorStores.files.createAndPoll(storeId, { file_id: file.id }, { pollIntervalMs: 20 });
  };
  const handbook = await admin.vectorStores.create({ name: 'handbook' });
  await admin.vectorStores.create({ name: 'empty' });
  const refunds = await add(admin, handbook.id, 'refunds.md', 'Customers may ask for a refund within thirty days.');
  const blank = await add(admin, handbook.id, 'blank.txt', ' \n\n ');
  if (blank.status !== 'failed') throw new Error(`the blank file should fail, it is ${blank.status}`);
  const notes = await key.vectorStores.create({ name: 'notes' });
  const shipping = await add(key, notes.id, 'shipping.txt', 'Shipping takes five business days to the door.');
  for (const file of [refunds, shipping]) {
    if (file.status !== 'completed')
      throw new Error(`${file.id} is ${file.status}: ${JSON.stringify(file.last_error)}`);
  }

  await admin.vectorStores.search(handbook.id, { query: 'refund' });
  await admin.vectorStores.search(handbook.id, { query: 'thirty days' });
  await admin.vectorStores.search('vs_000000000000000000000000', { query: 'refund' }).catch(() => undefined);

  const bytesOf = async (as: OpenAI, id: string) => (await as.vectorStores.retrieve(id)).usage_bytes;
  return {
    gw,
    embedder,
    admin: { caller: 'admin', stores: 2, files: 2, failed: 1, bytes: await bytesOf(admin, handbook.id) },
    key: { caller: `key:${issued.keyId}`, stores: 1, files: 1, failed: 0, bytes: await bytesOf(key, notes.id) },
    async close() {
      await gw.close();
      await embedder.close();
    },
  };
}
