import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GatewayConfig } from '../config/types.js';
import type { FileStore, ForwardedFileStore, UploadStore } from './file-contract.js';
import type { SqliteStore } from './sqlite/sqlite-store.js';
import type { StorageUseStore } from './storage-use.js';

export interface FileStores {
  files: FileStore;
  uploads: UploadStore;
  /** Which files were uploaded to which upstream's Files API (docs/files.md, "Files in requests"). */
  forwarded: ForwardedFileStore;
  /** The stored bytes of each caller and of all, for the quotas (docs/files.md, "Storage quotas"). */
  storage: StorageUseStore;
  kind: 'embedded' | 'postgres';
  close(): Promise<void>;
}

/**
 * Where files and uploads live (`files.store`, docs/files.md): `embedded` keeps the records in the SQLite file and
 * the bytes under DATA_DIR/files and DATA_DIR/uploads (a temporary folder for an in-memory store); `postgres`
 * keeps both in DATABASE_URL's database, shared by every instance (`pg` is imported only then).
 */
export async function openFileStores(config: GatewayConfig, sqlite: SqliteStore): Promise<FileStores> {
  if (config.files.store === 'postgres') {
    if (!config.databaseUrl) throw new Error('files.store is postgres but DATABASE_URL is not set');
    const { PostgresFileStores } = await import('./postgres/postgres-files.js');
    const stores = await PostgresFileStores.open(config.databaseUrl);
    return {
      files: stores.files,
      uploads: stores.uploads,
      forwarded: stores.forwarded,
      storage: stores.storage,
      kind: 'postgres',
      close: () => stores.close(),
    };
  }
  const [
    { DiskContent },
    { SqliteFileStore },
    { SqliteUploadStore },
    { SqliteForwardedFileStore },
    { SqliteStorageUseStore },
  ] = await Promise.all([
    import('./sqlite/disk-content.js'),
    import('./sqlite/sqlite-files.js'),
    import('./sqlite/sqlite-uploads.js'),
    import('./sqlite/sqlite-forwarded-files.js'),
    import('./sqlite/sqlite-storage-use.js'),
  ]);
  const root = config.dataDir === ':memory:' ? mkdtempSync(join(tmpdir(), 'gw-files-')) : config.dataDir;
  return {
    files: new SqliteFileStore(sqlite.db, new DiskContent(join(root, 'files'))),
    uploads: new SqliteUploadStore(sqlite.db, new DiskContent(join(root, 'uploads'))),
    forwarded: new SqliteForwardedFileStore(sqlite.db),
    storage: new SqliteStorageUseStore(sqlite.db),
    kind: 'embedded',
    close: () => Promise.resolve(),
  };
}
