/**
 * Vector stores count against the files' storage quotas (docs/retrieval.md, "Operators"; docs/files.md, "Storage
 * quotas"), through the real gateway: a store's chunk bytes are in its owner's stored bytes (kept by the database's
 * triggers, removed with the store); adding files to a store for a caller with no room left is refused as an upload
 * is (429 storage_quota_exceeded, 507 storage_full); a file whose chunks would pass the quota ends `failed` with a
 * last_error naming the quota, nothing of it stored. The quotas are changed between phases by starting the gateway
 * again on the same data directory with another config file.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import pg from 'pg';
import { newApiKey } from '../../../src/auth/api-key.js';
import { SqliteKeyStore } from '../../../src/store/sqlite/sqlite-keys.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { startWordEmbedder, type WordEmbedder } from '../../helpers/upstreams/word-embedder.js';
import { postgresSkipReason } from '../../helpers/services.js';
import { scratchPostgresSchema } from '../../helpers/scratch-postgres-schema.js';

const TEXT = (topic: string) => `${topic} policy: ${'customers may ask for a refund within thirty days. '.repeat(8)}`;
const BIG = 1_000_000_000;

/** Where the files, the vector stores and the ledger live: the SQLite file, or one PostgreSQL database. */
interface Backend {
  name: string;
  skip?: string | undefined;
  /** The env and config lines of the backend; `query` reads its database. */
  open(): Promise<{
    env: Record<string, string>;
    config: string;
    query(sql: string, args: unknown[]): Promise<Record<string, unknown>[]>;
    close(): Promise<void>;
  }>;
}

const embedded = (gw: () => TestGateway): Backend => ({
  name: 'embedded',
  open: async () => ({
    env: {},
    config: '',
    query: async (sql, args) =>
      gw()
        .store.db.prepare(sql.replace(/\$\d/g, '?'))
        .all(...(args as string[])) as Record<string, unknown>[],
    close: async () => undefined,
  }),
});

const postgres: Backend = {
  name: 'PostgreSQL',
  skip: await postgresSkipReason(),
  open: async () => {
    const schema = await scratchPostgresSchema();
    const client = new pg.Client({ connectionString: schema.url });
    await client.connect();
    return {
      env: { DATABASE_URL: schema.url },
      config: 'vector_stores:\n  store: postgres\n',
      query: async (sql, args) => (await client.query(sql.replaceAll('storage_', 'gw_storage_'), args)).rows,
      close: async () => {
        await client.end();
        await schema.drop();
      },
    };
  },
};

let current: TestGateway | undefined;
quotaSuite(embedded(() => current!));
quotaSuite(postgres);

function quotaSuite(backend: Backend): void {
  describe(`vector stores and the storage quotas: ${backend.name}`, { skip: backend.skip }, () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-vs-quota-'));
    let db: Awaited<ReturnType<Backend['open']>>;
    let embedder: WordEmbedder;
    let gw: TestGateway | undefined;
    let keyCaller: string;
    let key: string;
    /** What phase 1 left: the stores and files, and the ledger. */
    const made = { store: '', fileA: '', fileB: '', keyStore: '', keyFile: '', chunkBytesA: 0 };

    const start = async (perCaller: number, total: number) => {
      await gw?.close();
      gw = current = await startGateway({
        env: {
          ...db.env,
          DATA_DIR: dataDir,
          UPSTREAM_BASE_URL: embedder.baseUrl,
          UPSTREAM_API_KEY: 'sk-embedder-key-0123456789abcdef',
        },
        configFile: {
          name: 'quota.yaml',
          text: `files:\n  quota_bytes_per_caller: ${perCaller}\n  quota_bytes_total: ${total}\n${
            db.config ? `  store: postgres\n${db.config}` : ''
          }`,
        },
      });
      return gw;
    };
    const client = (apiKey: string) => new OpenAI({ baseURL: `${gw!.url}/v1`, apiKey, maxRetries: 0 });
    const ledger = async (owner: string) =>
      Number((await db.query('SELECT bytes FROM storage_use WHERE owner = $1', [owner]))[0]?.bytes ?? 0);
    const reservations = async () =>
      Number((await db.query('SELECT count(*) AS n FROM storage_reservations', []))[0]?.n);
    const post = async (apiKey: string, path: string, body: unknown) => {
      const res = await fetch(`${gw!.url}/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as { code?: string; details?: Record<string, unknown> } };
    };

    before(async () => {
      embedder = await startWordEmbedder({ dimensions: 256 });
      db = await backend.open();
      await start(BIG, BIG);
      const issued = newApiKey('dev');
      await new SqliteKeyStore(gw!.store.db).create({
        keyId: issued.keyId,
        environment: 'dev',
        hash: issued.hash,
        name: 'quota-caller',
        routes: ['vector_stores', 'files', 'embeddings'],
        models: ['*'],
        createdMs: Date.now(),
      });
      key = issued.key;
      keyCaller = `key:${issued.keyId}`;
    });
    after(async () => {
      await gw?.close();
      await embedder?.close();
      await db?.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    test("phase 1: a store's chunk bytes are in its owner's stored bytes, with the files'", async () => {
      const admin = client(ADMIN_TOKEN);
      const upload = async (as: OpenAI, name: string) =>
        as.files.create({ file: await toFile(Buffer.from(TEXT(name)), `${name}.txt`), purpose: 'assistants' });
      const a = await upload(admin, 'refunds');
      const b = await upload(admin, 'returns');
      const store = await admin.vectorStores.create({ name: 'handbook' });
      const added = await admin.vectorStores.files.createAndPoll(store.id, { file_id: a.id }, { pollIntervalMs: 20 });
      assert.equal(added.status, 'completed', JSON.stringify(added.last_error));
      const usage = (await admin.vectorStores.retrieve(store.id)).usage_bytes;
      assert.ok(usage > 1024, 'the chunk text and its 256 floats');
      assert.equal(await ledger('admin'), a.bytes + b.bytes + usage);
      const k = client(key);
      const keyFile = await upload(k, 'shipping');
      const keyStore = await k.vectorStores.create({ name: 'notes' });
      assert.equal(await ledger(keyCaller), keyFile.bytes);
      assert.equal(await ledger('*'), (await ledger('admin')) + (await ledger(keyCaller)));
      assert.equal(await reservations(), 0);
      Object.assign(made, {
        store: store.id,
        fileA: a.id,
        fileB: b.id,
        keyStore: keyStore.id,
        keyFile: keyFile.id,
        chunkBytesA: usage,
      });
    });

    test('phase 2: no room left: adding files to a store is 429 storage_quota_exceeded, or 507 storage_full', async () => {
      const used = { admin: await ledger('admin'), all: await ledger('*') };
      await start(used.admin, used.all);
      for (const [path, body] of [
        [`/vector_stores/${made.store}/files`, { file_id: made.fileB }],
        [`/vector_stores/${made.store}/file_batches`, { file_ids: [made.fileB] }],
        ['/vector_stores', { name: 'more', file_ids: [made.fileB] }],
      ] as const) {
        const refused = await post(ADMIN_TOKEN, path, body);
        assert.equal(refused.status, 429, `${path}: ${JSON.stringify(refused.json)}`);
        assert.equal(refused.json.code, 'storage_quota_exceeded');
        assert.equal(refused.json.details?.quota, 'files.quota_bytes_per_caller');
        assert.equal(refused.json.details?.used_bytes, used.admin);
      }
      assert.equal((await client(ADMIN_TOKEN).vectorStores.files.list(made.store)).data.length, 1, 'nothing added');
      assert.deepEqual(
        (await client(ADMIN_TOKEN).vectorStores.list()).data.map((v) => v.name),
        ['handbook'],
        'the refused create made no store',
      );
      // The key's own bytes leave it room, everyone's do not.
      const full = await post(key, `/vector_stores/${made.keyStore}/files`, { file_id: made.keyFile });
      assert.equal(full.status, 507, JSON.stringify(full.json));
      assert.equal(full.json.code, 'storage_full');
      assert.equal(full.json.details?.quota, 'files.quota_bytes_total');
    });

    test('phase 3: a file whose chunks would pass the quota fails naming it; nothing stored; a deleted store frees its bytes', async () => {
      const used = await ledger('admin');
      await start(used + 100, BIG);
      const admin = client(ADMIN_TOKEN);
      const file = await admin.vectorStores.files.createAndPoll(
        made.store,
        { file_id: made.fileB },
        { pollIntervalMs: 20 },
      );
      assert.equal(file.status, 'failed');
      assert.equal(file.last_error?.code, 'server_error');
      assert.match(
        file.last_error?.message ?? '',
        /would pass the owner's storage quota \(files\.quota_bytes_per_caller: \d+ bytes\)/,
      );
      assert.equal(file.usage_bytes, 0);
      assert.equal(await ledger('admin'), used, 'nothing of it counted');
      assert.equal(await reservations(), 0, 'its reservation ended');

      const deleted = await admin.vectorStores.delete(made.store);
      assert.equal(deleted.deleted, true);
      assert.equal(await ledger('admin'), used - made.chunkBytesA, "the store's chunk bytes are freed with it");
      assert.equal(await ledger('*'), (await ledger('admin')) + (await ledger(keyCaller)));
    });
  });
}
