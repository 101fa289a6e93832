/** The file and upload stores against their one contract: embedded (SQLite + disk) and PostgreSQL (chunked bytea). */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { DiskContent } from '../src/store/sqlite/disk-content.js';
import { SqliteFileStore } from '../src/store/sqlite/sqlite-files.js';
import { SqliteUploadStore } from '../src/store/sqlite/sqlite-uploads.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { PostgresFileStores } from '../src/store/postgres/postgres-files.js';
import { DATABASE_URL, postgresSkipReason } from './helpers/services.js';
import { fileStoreContract } from './store-contract/file-store-contract.js';

const skip = await postgresSkipReason();

fileStoreContract('embedded (SQLite file + DATA_DIR)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-files-'));
  const sqlite = await openSqliteStore(dir);
  return {
    files: new SqliteFileStore(sqlite.db, new DiskContent(join(dir, 'files'))),
    uploads: new SqliteUploadStore(sqlite.db, new DiskContent(join(dir, 'uploads'))),
    close: async () => {
      await sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

fileStoreContract(
  'PostgreSQL',
  async () => {
    const prefix = `t${randomUUID().replaceAll('-', '').slice(0, 12)}_`;
    const stores = await PostgresFileStores.open(DATABASE_URL, prefix);
    return {
      files: stores.files,
      uploads: stores.uploads,
      close: async () => {
        await stores.close();
        const client = new pg.Client({ connectionString: DATABASE_URL });
        await client.connect();
        for (const table of ['files', 'uploads', 'upload_parts', 'blob_chunks', 'forwarded_files'])
          await client.query(`DROP TABLE IF EXISTS ${prefix}${table}`);
        await client.end();
      },
    };
  },
  { skip },
);
