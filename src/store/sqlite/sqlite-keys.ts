import type * as Sqlite from './database.js';
import type { ApiKeyPatch, ApiKeyRecord, KeyStore } from '../store-contract.js';
import { patchedKey } from '../key-records.js';

/** Scoped API keys in the embedded store (table `api_keys`, migration 6): one JSON record per key id. */
export class SqliteKeyStore implements KeyStore {
  private readonly insert: Sqlite.Statement<[string, string]>;
  private readonly select: Sqlite.Statement<[string], string>;
  private readonly all: Sqlite.Statement<[], string>;
  private readonly replace: Sqlite.Statement<[string, string]>;

  constructor(db: Sqlite.Database) {
    this.insert = db.prepare('INSERT INTO api_keys (key_id, record) VALUES (?, ?)');
    this.select = db.prepare<[string], string>('SELECT record FROM api_keys WHERE key_id = ?').pluck();
    this.all = db.prepare<[], string>('SELECT record FROM api_keys ORDER BY key_id').pluck();
    this.replace = db.prepare('UPDATE api_keys SET record = ? WHERE key_id = ?');
  }

  async create(record: ApiKeyRecord): Promise<void> {
    this.insert.run(record.keyId, JSON.stringify(record));
  }

  async get(keyId: string): Promise<ApiKeyRecord | undefined> {
    const text = this.select.get(keyId);
    return text === undefined ? undefined : (JSON.parse(text) as ApiKeyRecord);
  }

  async list(): Promise<ApiKeyRecord[]> {
    return this.all.all().map((text) => JSON.parse(text) as ApiKeyRecord);
  }

  async update(keyId: string, patch: ApiKeyPatch): Promise<boolean> {
    const current = await this.get(keyId);
    if (!current) return false;
    this.replace.run(JSON.stringify(patchedKey(current, patch)), keyId);
    return true;
  }
}
