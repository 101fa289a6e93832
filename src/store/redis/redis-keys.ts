import type { ApiKeyPatch, ApiKeyRecord, KeyStore } from '../store-contract.js';
import { patchedKey } from '../key-records.js';
import type { RedisClient } from './connect.js';

/** Scoped API keys in Redis, seen by every instance: one hash field per key id holding its JSON record. */
export class RedisKeyStore implements KeyStore {
  constructor(
    private readonly client: RedisClient,
    private readonly hashKey = 'gw:keys',
  ) {}

  async create(record: ApiKeyRecord): Promise<void> {
    const created = await this.client.hsetnx(this.hashKey, record.keyId, JSON.stringify(record));
    if (created !== 1) throw new Error(`key id ${record.keyId} exists already`);
  }

  async get(keyId: string): Promise<ApiKeyRecord | undefined> {
    const text = await this.client.hget(this.hashKey, keyId);
    return text === null ? undefined : (JSON.parse(text) as ApiKeyRecord);
  }

  async list(): Promise<ApiKeyRecord[]> {
    const all = await this.client.hgetall(this.hashKey);
    return Object.keys(all)
      .sort()
      .map((id) => JSON.parse(all[id] as string) as ApiKeyRecord);
  }

  async update(keyId: string, patch: ApiKeyPatch): Promise<boolean> {
    const current = await this.get(keyId);
    if (!current) return false;
    await this.client.hset(this.hashKey, keyId, JSON.stringify(patchedKey(current, patch)));
    return true;
  }
}
