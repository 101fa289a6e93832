/** The file and upload stores against their one contract: embedded (SQLite + disk) and PostgreSQL (chunked bytea). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiskContent } from '../../src/store/sqlite/disk-content.js';
import { SqliteFileStore } from '../../src/store/sqlite/sqlite-files.js';
import { SqliteUploadStore } from '../../src/store/sqlite/sqlite-uploads.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { postgresSkipReason } from '../helpers/services.js';
import { scratchPostgresFileStores } from '../helpers/scratch-postgres-files.js';
import { fileStoreContract } from '../store-contract/file-store-contract.js';

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
    const { stores, close } = await scratchPostgresFileStores();
    return { files: stores.files, uploads: stores.uploads, close };
  },
  { skip },
);
