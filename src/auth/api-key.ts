import { createHash, randomBytes } from 'node:crypto';
import type { GatewayEnvironment } from '../config/schema.js';

/**
 * Scoped API keys: `gwk_<environment>_<key id>_<secret>`, e.g. `gwk_prod_k5d2m8q1xa_9Vq...`. The environment is in
 * a visible prefix (a key pasted into the wrong deployment is recognised at once, and refused with
 * `wrong_environment`), the key id names the key in logs, limits and the CLI (it is not secret), and the 32-byte
 * secret is random. Only SHA-256 of the whole key is stored: the key has 256 bits of entropy, so a fast hash is
 * enough (a slow hash is for passwords a person chose).
 */
const KEY_PATTERN = /^gwk_(dev|staging|prod)_([a-z0-9]{10})_([A-Za-z0-9_-]{43})$/;
const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

export interface ParsedKey {
  environment: GatewayEnvironment;
  keyId: string;
}

export function looksLikeApiKey(token: string): boolean {
  return token.startsWith('gwk_');
}

export function parseApiKey(token: string): ParsedKey | undefined {
  const match = KEY_PATTERN.exec(token);
  if (!match) return undefined;
  return { environment: match[1] as GatewayEnvironment, keyId: match[2] as string };
}

export function newApiKey(environment: GatewayEnvironment): { key: string; keyId: string; hash: string } {
  const bytes = randomBytes(10);
  let keyId = '';
  for (const byte of bytes) keyId += ID_ALPHABET[byte % ID_ALPHABET.length];
  const key = `gwk_${environment}_${keyId}_${randomBytes(32).toString('base64url')}`;
  return { key, keyId, hash: hashApiKey(key) };
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
