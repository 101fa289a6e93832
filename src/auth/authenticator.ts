import { timingSafeEqual } from 'node:crypto';
import type { GatewayEnvironment } from '../config/schema.js';
import type { LimitSet, WindowLimit } from '../config/types.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { AdminAuthenticator } from '../http/admin-auth.js';
import type { ApiKeyRecord, KeyStore } from '../store/contract.js';
import { hashApiKey, looksLikeApiKey, parseApiKey } from './api-key.js';
import { looksLikeJwt, type OAuthVerifier } from './oauth.js';

/** Who is calling and what they may do. `undefined` rights mean "everything" (the admin token). */
export interface Principal {
  /** The id limits, idempotency and events are kept under: `admin`, or `key:<key id>`. */
  caller: string;
  kind: 'admin' | 'key' | 'oauth';
  routes?: ReadonlySet<string>;
  models?: ReadonlySet<string>;
  /** The key's own per-caller limits (replacing the configured ones). */
  limits?: LimitSet;
  /** Tokens per rolling period. */
  budget?: WindowLimit;
}

export const ADMIN: Principal = { caller: 'admin', kind: 'admin' };

const MAX_CACHED_KEYS = 10_000;

const INVALID = { headers: { 'www-authenticate': 'Bearer realm="llm-gateway", error="invalid_token"' } };

/**
 * Authentication: the administrator token (the master key) or a scoped API key (`gwk_<env>_<id>_<secret>`,
 * looked up by id in the key store, compared by SHA-256 in constant time, cached for 5 s). Then authorisation of
 * the route. A key of another environment is refused as `wrong_environment` before any lookup.
 */
export class Authenticator {
  private readonly cache = new Map<string, { record: ApiKeyRecord | undefined; at: number }>();

  constructor(
    private readonly admin: AdminAuthenticator,
    private readonly options: {
      environment: GatewayEnvironment;
      keys: KeyStore | undefined;
      /** How long a key's record is trusted before it is read again: a revocation takes effect within this. */
      cacheMs: number;
      /** Accepts OAuth access tokens when an issuer is configured. */
      oauth?: OAuthVerifier;
      now?: () => number;
    },
  ) {}

  async authenticate(authorization: string | undefined, route: string): Promise<Principal> {
    const token = bearer(authorization);
    let principal: Principal;
    if (token !== undefined && looksLikeApiKey(token)) principal = await this.fromKey(token);
    else if (token !== undefined && this.options.oauth && looksLikeJwt(token)) principal = await this.options.oauth.verify(token);
    else {
      this.admin.authenticate(authorization);
      principal = ADMIN;
    }
    if (principal.routes && !principal.routes.has(route)) {
      throw new GatewayError('route_not_allowed', { route, allowed_routes: [...principal.routes] });
    }
    return principal;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private async fromKey(token: string): Promise<Principal> {
    const parsed = parseApiKey(token);
    if (!parsed) throw new GatewayError('invalid_token', { reason: 'not a well-formed gateway key' }, INVALID);
    if (parsed.environment !== this.options.environment) {
      throw new GatewayError('wrong_environment', { key_environment: parsed.environment, gateway_environment: this.options.environment });
    }
    const record = await this.record(parsed.keyId);
    const offered = Buffer.from(hashApiKey(token), 'hex');
    const stored = Buffer.from(record?.hash ?? '00'.repeat(32), 'hex');
    const matches = offered.length === stored.length && timingSafeEqual(offered, stored);
    if (!record || !matches) throw new GatewayError('invalid_token', {}, INVALID);
    const now = this.now();
    if (record.revokedMs !== undefined && record.revokedMs <= now) {
      throw new GatewayError('key_revoked', { key_id: record.keyId, revoked_at: new Date(record.revokedMs).toISOString() }, INVALID);
    }
    if (record.expiresMs !== undefined && record.expiresMs <= now) {
      throw new GatewayError('key_expired', { key_id: record.keyId, expired_at: new Date(record.expiresMs).toISOString() }, INVALID);
    }
    return principalOf(record);
  }

  private async record(keyId: string): Promise<ApiKeyRecord | undefined> {
    const cached = this.cache.get(keyId);
    const now = this.now();
    if (cached && now - cached.at < this.options.cacheMs) return cached.record;
    if (!this.options.keys) return undefined;
    const record = await this.options.keys.get(keyId);
    if (this.cache.size >= MAX_CACHED_KEYS) this.cache.clear();
    this.cache.set(keyId, { record, at: now });
    return record;
  }
}

function principalOf(record: ApiKeyRecord): Principal {
  const limits: LimitSet | undefined = record.limits
    ? {
        requests: record.limits.requests_per_minute !== undefined ? { limit: record.limits.requests_per_minute, windowMs: 60_000 } : undefined,
        tokens: record.limits.tokens_per_minute !== undefined ? { limit: record.limits.tokens_per_minute, windowMs: 60_000 } : undefined,
        concurrent: record.limits.concurrent,
      }
    : undefined;
  return {
    caller: `key:${record.keyId}`,
    kind: 'key',
    routes: new Set(record.routes),
    ...(record.models.includes('*') ? {} : { models: new Set(record.models) }),
    ...(limits ? { limits } : {}),
    ...(record.budget ? { budget: { limit: record.budget.tokens, windowMs: record.budget.period_seconds * 1000 } } : {}),
  };
}

function bearer(header: string | undefined): string | undefined {
  if (header === undefined || header.length < 8 || header.slice(0, 7).toLowerCase() !== 'bearer ') return undefined;
  const token = header.slice(7).trim();
  return token === '' ? undefined : token;
}

/** A model id the principal may call (the id it used, or the model an alias stands for). */
export function modelAllowed(principal: Principal, ...ids: ReadonlyArray<string | undefined>): boolean {
  return principal.models === undefined || ids.some((id) => id !== undefined && principal.models?.has(id) === true);
}
