import { hash, timingSafeEqual } from 'node:crypto';
import { GatewayError } from '../errors/gateway-error.js';

const CHALLENGE = { 'www-authenticate': 'Bearer realm="llm-gateway"' };

/**
 * Checks `Authorization: Bearer <ADMIN_TOKEN>` against every configured admin token in constant time: both sides
 * are hashed to 32 bytes first (so lengths never leak) and every token is compared, with no early exit.
 */
export class AdminAuthenticator {
  private readonly digests: Buffer[];

  constructor(tokens: readonly string[]) {
    if (tokens.length === 0) throw new Error('AdminAuthenticator needs at least one token');
    this.digests = tokens.map(digest);
  }

  /** Throws 401 (with WWW-Authenticate, RFC 6750 section 3) unless the header carries a valid admin token. */
  authenticate(authorization: string | undefined): void {
    if (authorization === undefined || authorization === '') {
      throw new GatewayError('authentication_required', {}, { headers: CHALLENGE });
    }
    const token = bearerToken(authorization);
    if (token === undefined) {
      throw new GatewayError(
        'invalid_token',
        { reason: 'the Authorization header must use the Bearer scheme' },
        { headers: { 'www-authenticate': 'Bearer realm="llm-gateway", error="invalid_request"' } },
      );
    }
    const candidate = digest(token);
    let match = false;
    for (const expected of this.digests) match = timingSafeEqual(candidate, expected) || match;
    if (!match) {
      throw new GatewayError(
        'invalid_token',
        {},
        { headers: { 'www-authenticate': 'Bearer realm="llm-gateway", error="invalid_token"' } },
      );
    }
  }

  /** Whether the header carries a valid admin token (the same constant-time check), without refusing anything. */
  isAdmin(authorization: string | undefined): boolean {
    if (authorization === undefined || authorization === '') return false;
    try {
      this.authenticate(authorization);
      return true;
    } catch {
      return false;
    }
  }
}

function digest(value: string): Buffer {
  // The one-shot crypto.hash is faster than createHash().update().digest() (no Hash object per call).
  return hash('sha256', value, 'buffer');
}

/** The token of an `Authorization: Bearer <token>` header, or undefined for another scheme or an empty token. */
export function bearerToken(header: string): string | undefined {
  // RFC 7235: the scheme is case-insensitive.
  if (header.length < 8 || header.slice(0, 7).toLowerCase() !== 'bearer ') return undefined;
  const token = header.slice(7).trim();
  return token === '' ? undefined : token;
}
