/** openVectorStore: the backend the caller names, PostgreSQL only with a URL. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openVectorStore } from '../../src/store/open-vector-store.js';
import { postgresSkipReason } from '../helpers/services.js';
import { scratchPostgresSchema } from '../helpers/scratch-postgres-schema.js';

const skip = await postgresSkipReason();

test('embedded: on the SQLite connection; postgres: refused without DATABASE_URL', async () => {
  const sqlite = await openSqliteStore(':memory:');
  try {
    const embedded = await openVectorStore('embedded', { sqlite });
    assert.equal(embedded.kind, 'embedded');
    assert.equal(embedded.store.capabilities.backend, 'sqlite');
    await embedded.close();
    await assert.rejects(openVectorStore('postgres', { sqlite }), /DATABASE_URL/);
  } finally {
    await sqlite.close();
  }
});

test('postgres: in DATABASE_URL', { skip }, async () => {
  const sqlite = await openSqliteStore(':memory:');
  const schema = await scratchPostgresSchema();
  try {
    const opened = await openVectorStore('postgres', { sqlite, databaseUrl: schema.url });
    assert.equal(opened.kind, 'postgres');
    assert.equal(opened.store.capabilities.backend, 'postgres');
    assert.deepEqual([...opened.store.capabilities.metrics], ['cosine', 'dot', 'euclidean']);
    await opened.close();
  } finally {
    await sqlite.close();
    await schema.drop();
  }
});
