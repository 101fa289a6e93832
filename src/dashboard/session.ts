import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'llmgw_dashboard';

/**
 * Dashboard sessions without server state: the cookie is `<expiry s>.<nonce>.<HMAC>` signed with a key derived
 * from the admin token. Every replica sharing the admin token accepts it; rotating the token (ADMIN_TOKEN) ends
 * every session. The token itself is never in the cookie, and the cookie is HttpOnly (no script can read it).
 */
export class DashboardSessions {
  private readonly keys: Buffer[];

  constructor(
    adminTokens: readonly string[],
    readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.keys = adminTokens.map((token) => createHmac('sha256', 'llmgw dashboard session v1').update(token).digest());
  }

  /** A new session value, signed with the first (newest) admin token's key. */
  issue(): string {
    const key = this.keys[0];
    if (!key) throw new Error('no admin token');
    const payload = `${Math.floor((this.now() + this.ttlMs) / 1000)}.${randomBytes(16).toString('base64url')}`;
    return `${payload}.${mac(key, payload)}`;
  }

  /** True for an unexpired value signed with any current admin token's key (compared in constant time). */
  valid(value: string | undefined): boolean {
    if (value === undefined) return false;
    const parts = value.split('.');
    if (parts.length !== 3) return false;
    const [expiry, nonce, signature] = parts as [string, string, string];
    if (!/^\d{1,12}$/.test(expiry) || Number(expiry) * 1000 <= this.now()) return false;
    // The text is compared, not its decoding: a variant spelling of the same bytes is not accepted.
    const given = Buffer.from(signature);
    let ok = false;
    for (const key of this.keys) {
      const expected = Buffer.from(mac(key, `${expiry}.${nonce}`));
      ok = (given.length === expected.length && timingSafeEqual(given, expected)) || ok;
    }
    return ok;
  }
}

function mac(key: Buffer, payload: string): string {
  return createHmac('sha256', key).update(payload).digest('base64url');
}

/** One cookie's value from a Cookie header (RFC 6265: `name=value; name2=value2`). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}
