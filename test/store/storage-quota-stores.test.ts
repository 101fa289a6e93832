/**
 * The stored bytes ledger against its contract: embedded (SQLite migration 24 + DATA_DIR) and PostgreSQL (issue 41);
 * and the ledger's first figures, counted from what was stored before it existed.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Readable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiskContent } from '../../src/store/sqlite/disk-content.js';
import { SqliteFileStore } from '../../src/store/sqlite/sqlite-files.js';
import { SqliteStorageUseStore } from '../../src/store/sqlite/sqlite-storage-use.js';
import { SqliteUploadStore } from '../../src/store/sqlite/sqlite-uploads.js';
import { migrate, openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openDatabase } from '../../src/store/sqlite/database.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import pg from 'pg';
import { PostgresFileStores } from '../../src/store/postgres/postgres-files.js';
import { DATABASE_URL, postgresSkipReason } from '../helpers/services.js';
import { scratchPostgresFileStores } from '../helpers/scratch-postgres-files.js';
import { storageUseContract } from '../store-contract/storage-use-contract.js';

const skip = await postgresSkipReason();

storageUseContract('embedded (SQLite file + DATA_DIR), two connections', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-storage-'));
  const sqlite = await openSqliteStore(dir);
  const second = await openSqliteStore(dir);
  return {
    files: new SqliteFileStore(sqlite.db, new DiskContent(join(dir, 'files'))),
    uploads: new SqliteUploadStore(sqlite.db, new DiskContent(join(dir, 'uploads'))),
    storage: new SqliteStorageUseStore(sqlite.db),
    other: {
      uploads: new SqliteUploadStore(second.db, new DiskContent(join(dir, 'uploads'))),
      storage: new SqliteStorageUseStore(second.db),
    },
    close: async () => {
      await second.close();
      await sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

storageUseContract(
  'PostgreSQL, two instances',
  async () => {
    const { stores, prefix, close } = await scratchPostgresFileStores();
    const other = await PostgresFileStores.open(DATABASE_URL, prefix);
    return {
      files: stores.files,
      uploads: stores.uploads,
      storage: stores.storage,
      other: { uploads: other.uploads, storage: other.storage },
      close: async () => {
        await other.close();
        await close();
      },
    };
  },
  { skip },
);

describe('the ledger starts from what is stored when it is added', () => {
  test('SQLite: migration 24 counts the files and parts stored before it, per owner and in all', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-storage-legacy-'));
    try {
      const old = await openDatabase(join(dir, 'gateway.db'), 5_000);
      migrate(
        old,
        SQLITE_MIGRATIONS.filter((m) => m.version < 24),
      );
      const file = old.prepare(
        `INSERT INTO files (id, owner, purpose, filename, bytes, sha256, mime_type, created_ms, expires_ms)
         VALUES (?, ?, 'batch', 'f', ?, 'x', NULL, 0, 1)`,
      );
      file.run('file-a', 'admin', 300);
      file.run('file-b', 'key:k1', 50);
      file.run('file-c', 'admin', 7);
      old.exec(`INSERT INTO uploads (id, owner, filename, purpose, bytes, mime_type, created_ms, expires_ms, status)
                VALUES ('upload_1', 'key:k1', 'u', 'batch', 1000, 'text/plain', 0, 1, 'pending');
                INSERT INTO upload_parts (upload_id, id, bytes, created_ms) VALUES ('upload_1', 'part_1', 400, 0);`);
      old.close();
      const sqlite = await openSqliteStore(dir);
      const storage = new SqliteStorageUseStore(sqlite.db);
      assert.deepEqual(await storage.use('admin'), { owner: 307, total: 757 });
      assert.deepEqual(await storage.use('key:k1'), { owner: 450, total: 757 });
      await sqlite.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('PostgreSQL: the schema applied to tables that hold files counts them', { skip }, async () => {
    const { stores, prefix, close } = await scratchPostgresFileStores();
    try {
      for (const [owner, size] of [
        ['admin', 300],
        ['key:k1', 50],
      ] as const) {
        const id = `file-${randomUUID().replaceAll('-', '').slice(0, 24)}`;
        await stores.files.put(id, Readable.from([Buffer.alloc(size)]), size, () => ({
          id,
          owner,
          purpose: 'batch',
          filename: 'f',
          mimeType: null,
          createdMs: 0,
          expiresMs: Date.now() + 60_000,
        }));
      }
      // As before the ledger existed: no ledger tables, no triggers.
      const admin = new pg.Client({ connectionString: DATABASE_URL });
      await admin.connect();
      await admin.query(`DROP TABLE ${prefix}storage_use, ${prefix}storage_reservations`);
      for (const trigger of ['files_storage', 'upload_parts_storage'])
        await admin.query(`DROP TRIGGER ${prefix}${trigger} ON ${prefix}${trigger.replace('_storage', '')}`);
      await admin.end();
      const reopened = await PostgresFileStores.open(DATABASE_URL, prefix);
      assert.deepEqual(await reopened.storage.use('admin'), { owner: 300, total: 350 });
      assert.deepEqual(await reopened.storage.use('key:k1'), { owner: 50, total: 350 });
      await reopened.close();
    } finally {
      await close();
    }
  });
});
