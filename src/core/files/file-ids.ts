import { randomBytes } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `prefix` and 24 random letters and digits (~143 bits), the shape of OpenAI's `file-...` ids. */
export function randomId(prefix: string): string {
  const bytes = randomBytes(24);
  let out = prefix;
  // 256 % 62 leaves a slight bias toward the first 8 characters: irrelevant for an unguessable id of 143 bits.
  for (const byte of bytes) out += ALPHABET[byte % ALPHABET.length];
  return out;
}

/** An id the gateway could have made with `randomId(prefix)`: checked before it reaches a path or a query. */
export function isOwnId(id: string, prefix: string): boolean {
  return id.length === prefix.length + 24 && id.startsWith(prefix) && /^[A-Za-z0-9]{24}$/.test(id.slice(prefix.length));
}
