import { newApiKey } from '../../src/auth/api-key.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SqliteKeyStore } from '../../src/store/sqlite/sqlite-keys.js';

/** A scoped key of the gateway (another caller than the admin token), written to its key store as the CLI does. */
export async function scopedKey(store: SqliteStore, routes: string[], models: string[] = ['*']): Promise<string> {
  const issued = newApiKey('dev');
  await new SqliteKeyStore(store.db).create({
    keyId: issued.keyId,
    environment: 'dev',
    hash: issued.hash,
    name: `other-${issued.keyId}`,
    routes,
    models,
    createdMs: Date.now(),
  });
  return issued.key;
}
