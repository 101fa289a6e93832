import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Presigned upload URLs (docs/files.md, "Presigned URLs"): a capability to PUT the bytes of one upload, signed by
 * the gateway. The token in the URL is `v1.<expires (Unix s)>.<nonce>.<signature>`; the signature is
 * HMAC-SHA256 over the owner, the upload id, the size, the expiry and the nonce, under a key derived (HKDF) from
 * the gateway's secret, so the key itself never appears in a URL and a token for one upload, size or caller does
 * not verify for another. Single use is the store's job (the nonce is taken once).
 */
export interface PresignedClaims {
  owner: string;
  uploadId: string;
  bytes: number;
  /** Unix seconds. */
  expires: number;
  nonce: string;
}

const VERSION = 'v1';

/** The signing key, derived from the gateway's secret; a random one (valid in this process only) without a secret. */
export function presignKey(secret: string | undefined): Buffer {
  const material = secret && secret.length > 0 ? secret : randomBytes(32).toString('hex');
  return Buffer.from(hkdfSync('sha256', material, 'llm-gateway', 'llm-gateway presigned upload v1', 32));
}

function signature(key: Buffer, c: PresignedClaims): Buffer {
  return createHmac('sha256', key)
    .update(`${VERSION}\n${c.owner}\n${c.uploadId}\n${c.bytes}\n${c.expires}\n${c.nonce}`)
    .digest();
}

export function newNonce(): string {
  return randomBytes(16).toString('base64url');
}

/** The token for the URL's last path segment. */
export function signPresigned(key: Buffer, claims: PresignedClaims): string {
  return `${VERSION}.${claims.expires}.${claims.nonce}.${signature(key, claims).toString('base64url')}`;
}

/** The expiry and nonce a token states (not yet verified): undefined when it is not shaped like one of ours. */
export function readPresigned(token: string): { expires: number; nonce: string; signature: string } | undefined {
  const match = /^v1\.(\d{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return undefined;
  return { expires: Number(match[1]), nonce: match[2] as string, signature: match[3] as string };
}

/**
 * Whether `token` is the gateway's signature over exactly these claims, in its one canonical spelling: the token is
 * made again from the claims and compared whole (constant time). A second spelling of the same claims — the expiry
 * with leading zeros (`v1.00<expires>`), a signature or nonce whose last base64url character differs only in the
 * bits the encoding leaves spare — decodes to the same values but is not the URL the gateway issued: refused.
 */
export function verifyPresigned(key: Buffer, token: string, claims: PresignedClaims): boolean {
  const given = Buffer.from(token);
  const expected = Buffer.from(signPresigned(key, claims));
  return given.length === expected.length && timingSafeEqual(given, expected);
}
