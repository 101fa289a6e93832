import type { ApiKeyPatch, ApiKeyRecord } from './store-contract.js';

/** `current` with `patch` applied, its id, hash, environment and creation time kept whatever the patch holds. */
export function patchedKey(current: ApiKeyRecord, patch: ApiKeyPatch): ApiKeyRecord {
  return {
    ...current,
    ...patch,
    keyId: current.keyId,
    hash: current.hash,
    environment: current.environment,
    createdMs: current.createdMs,
  };
}
