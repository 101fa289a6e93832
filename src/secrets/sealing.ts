import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Sealing a stored answer that carries a secret shown once (a key's creation or rotation, replayed for its
 * Idempotency-Key): AES-256-GCM under a key derived (HKDF-SHA256) from the Idempotency-Key value and a server secret
 * the store does not hold (the pepper), bound to the caller, the request's fingerprint and the status (GCM's
 * additional data: a sealed answer moved to another row does not open). The store is given only an HMAC of the
 * Idempotency-Key under the pepper (`sealedKeyName`), so what opens the answer is not in the store.
 */

/** What a sealed answer is bound to: the key material (Idempotency-Key, pepper) and the row it belongs to. */
export interface SealBinding {
  idempotencyKey: string;
  pepper: string;
  scope: string;
  fingerprint: string;
  status: number;
}

const SEALED_PREFIX = 'sealed.v1.';

/** The name a sealed answer is stored under: an HMAC of the Idempotency-Key under the pepper (never the key itself). */
export function sealedKeyName(pepper: string, idempotencyKey: string): string {
  return `sealed:${createHmac('sha256', pepper).update(idempotencyKey).digest('hex')}`;
}

function sealingKey(binding: SealBinding): Buffer {
  return Buffer.from(
    hkdfSync(
      'sha256',
      `${binding.pepper}\n${binding.idempotencyKey}`,
      binding.scope,
      'llm-gateway sealed idempotent answer',
      32,
    ),
  );
}

function additionalData(binding: SealBinding): Buffer {
  return Buffer.from(`${binding.scope}\n${binding.fingerprint}\n${binding.status}`);
}

/** `sealed.v1.` + base64 of IV (12 bytes), tag (16 bytes) and ciphertext. */
export function seal(text: string, binding: SealBinding): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(binding), iv);
  cipher.setAAD(additionalData(binding));
  const ciphertext = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64');
}

/** The text sealed by `seal`, or undefined when it is not one or does not open with this key. */
export function open(sealed: string, binding: SealBinding): string | undefined {
  if (!sealed.startsWith(SEALED_PREFIX)) return undefined;
  const bytes = Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64');
  if (bytes.length < 28) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(binding), bytes.subarray(0, 12));
    decipher.setAAD(additionalData(binding));
    decipher.setAuthTag(bytes.subarray(12, 28));
    return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
