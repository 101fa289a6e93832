import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { GatewayEnvironment } from '../config/schema.js';
import type { BasicUser, LimitSet } from '../config/types.js';
import type { Budget } from '../core/limits/rate-limit-service.js';
import { verifyPassword } from '../secrets/password.js';
import { GatewayError } from '../errors/gateway-error.js';
import { bearerToken, type AdminAuthenticator } from './admin-auth.js';
import type { ApiKeyRecord, KeyStore } from '../store/store-contract.js';
import { hashApiKey, looksLikeApiKey, parseApiKey } from './api-key.js';
import { looksLikeJwt, type OAuthVerifier } from './oauth.js';
import { ADMIN, type Principal } from './principal.js';

const MAX_CACHED_KEYS = 10_000;
const BASIC_CACHE_MS = 5 * 60_000;
/** A real hash of a random password: unknown users cost one verification too. */
const DUMMY_HASH = 'scrypt$32768$8$1$JodbRKDu8zCGdpIeryHbqA==$oMr9Gemqp4xBAxwmFcKrg7FzfbySQFMJh4ZPYGXo2B0=';

/** What a batch runner's one-call ticket starts with (`delegate`). */
const TICKET_PREFIX = 'gwbatch_';

const INVALID = { headers: { 'www-authenticate': 'Bearer realm="llm-gateway", error="invalid_token"' } };

/**
 * Authentication: the administrator token (the master key) or a scoped API key (`gwk_<env>_<id>_<secret>`,
 * looked up by id in the key store, compared by SHA-256 in constant time, cached for 5 s). Then authorisation of
 * the route. A key of another environment is refused as `wrong_environment` before any lookup.
 */
export class Authenticator {
  private readonly cache = new Map<string, { record: ApiKeyRecord | undefined; at: number }>();
  /** How many times each key was forgotten (changed on this instance): a lookup that saw it move is not cached. */
  private readonly forgotten = new Map<string, number>();
  private readonly basicCache = new Map<string, number>();
  /** Tickets for the batch runner's calls (`delegate`): a principal each, in memory only, for one call. */
  private readonly tickets = new Map<string, Principal>();

  constructor(
    private readonly admin: AdminAuthenticator,
    private readonly options: {
      environment: GatewayEnvironment;
      keys: KeyStore | undefined;
      /** How long a key's record is trusted before it is read again: a revocation takes effect within this. */
      cacheMs: number;
      /** Accepts OAuth access tokens when an issuer is configured. */
      oauth?: OAuthVerifier;
      /** Users for Basic authentication (HTTPS only). */
      basicUsers?: BasicUser[];
      /** The MCP tools an OAuth token may call (`mcp.oauth_tools`, with the `mcp` route); absent: none. */
      oauthTools?: readonly string[];
      now?: () => number;
    },
  ) {}

  /**
   * A config reload: OAuth, Basic users and OAuth tokens' MCP tools as the new file says, for the calls
   * authenticated from now on.
   */
  reconfigure(parts: {
    oauth: OAuthVerifier | undefined;
    basicUsers: BasicUser[];
    oauthTools?: readonly string[];
  }): void {
    if (parts.oauth) this.options.oauth = parts.oauth;
    else delete this.options.oauth;
    this.options.basicUsers = parts.basicUsers;
    if (parts.oauthTools) this.options.oauthTools = parts.oauthTools;
    this.basicCache.clear();
  }

  /** The configured issuer's verifier (undefined: OAuth is not configured): what the protected-resource metadata names. */
  get oauth(): OAuthVerifier | undefined {
    return this.options.oauth;
  }

  /**
   * `route`: the route right the call needs, or several of which any one will do (Anthropic's models API: `models`
   * or `messages`). `secure`: the request came over HTTPS (our TLS listener, or a trusted proxy's X-Forwarded-Proto).
   */
  async authenticate(
    authorization: string | undefined,
    route: string | readonly string[],
    secure = false,
  ): Promise<Principal> {
    const token = authorization === undefined ? undefined : bearerToken(authorization);
    let principal: Principal;
    const delegated = token !== undefined && token.startsWith(TICKET_PREFIX) ? this.tickets.get(token) : undefined;
    // Basic only where users are configured; elsewhere it is just another scheme this gateway does not take.
    if (delegated) principal = delegated;
    else if (
      authorization !== undefined &&
      (this.options.basicUsers?.length ?? 0) > 0 &&
      /^basic /i.test(authorization)
    ) {
      principal = await this.fromBasic(authorization.slice(6).trim(), secure);
    } else if (token !== undefined && looksLikeApiKey(token)) principal = await this.fromKey(token);
    else if (token !== undefined && this.options.oauth && looksLikeJwt(token))
      principal = { ...(await this.options.oauth.verify(token)), mcpTools: this.options.oauthTools ?? [] };
    else {
      this.admin.authenticate(authorization);
      principal = ADMIN;
    }
    const granted = principal.routes;
    if (granted && !(typeof route === 'string' ? granted.has(route) : route.some((r) => granted.has(r)))) {
      throw new GatewayError('route_not_allowed', {
        route: typeof route === 'string' ? route : route.join(' or '),
        allowed_routes: [...granted],
      });
    }
    return principal;
  }

  /**
   * A one-call credential for the batch runner: the batch owner's principal as it is now (a key read
   * again, so a revoked or expired key's lines fail; another kind as it was when the batch was created), behind a
   * random 256-bit ticket that exists only in this process's memory until `release`. It goes through `authenticate`
   * like any credential, so the route's right is checked as for the owner's own calls.
   */
  async delegate(owner: string, snapshot: Principal): Promise<string> {
    const principal = await this.principalNow(owner, snapshot);
    const ticket = `${TICKET_PREFIX}${randomBytes(32).toString('base64url')}`;
    this.tickets.set(ticket, principal);
    return ticket;
  }

  /**
   * A batch owner's principal as it is now: a key read again (a revoked, expired or deleted key is a 401
   * GatewayError), the admin as the admin, another kind as it was when the batch was created.
   */
  async principalNow(owner: string, snapshot: Principal): Promise<Principal> {
    if (owner === ADMIN.caller) return ADMIN;
    if (!owner.startsWith('key:')) return snapshot;
    const record = await this.record(owner.slice(4));
    if (!record) throw new GatewayError('invalid_token', { reason: "the batch owner's key no longer exists" }, INVALID);
    this.checkActive(record);
    return principalOf(record);
  }

  release(ticket: string): void {
    this.tickets.delete(ticket);
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private async fromKey(token: string): Promise<Principal> {
    const parsed = parseApiKey(token);
    if (!parsed) throw new GatewayError('invalid_token', { reason: 'not a well-formed gateway key' }, INVALID);
    if (parsed.environment !== this.options.environment) {
      throw new GatewayError('wrong_environment', {
        key_environment: parsed.environment,
        gateway_environment: this.options.environment,
      });
    }
    const record = await this.record(parsed.keyId);
    const offered = Buffer.from(hashApiKey(token), 'hex');
    const stored = Buffer.from(record?.hash ?? '00'.repeat(32), 'hex');
    const matches = offered.length === stored.length && timingSafeEqual(offered, stored);
    if (!record || !matches) throw new GatewayError('invalid_token', {}, INVALID);
    this.checkActive(record);
    return principalOf(record);
  }

  private checkActive(record: ApiKeyRecord): void {
    const now = this.now();
    if (record.revokedMs !== undefined && record.revokedMs <= now) {
      throw new GatewayError(
        'key_revoked',
        { key_id: record.keyId, revoked_at: new Date(record.revokedMs).toISOString() },
        INVALID,
      );
    }
    if (record.expiresMs !== undefined && record.expiresMs <= now) {
      throw new GatewayError(
        'key_expired',
        { key_id: record.keyId, expired_at: new Date(record.expiresMs).toISOString() },
        INVALID,
      );
    }
  }

  /**
   * `Authorization: Basic` against the configured users' scrypt hashes, over HTTPS only (over plain HTTP the
   * password has already crossed the network in clear: refused, and the caller told why). A verified
   * (user, password) pair is remembered for 5 minutes so the slow hash is not paid on every request.
   */
  private async fromBasic(encoded: string, secure: boolean): Promise<Principal> {
    if (!secure)
      throw new GatewayError('basic_auth_requires_https', {
        scheme: 'Basic',
        hint: 'use https://, or a bearer token; change that password if this request crossed a network',
      });
    const decoded = Buffer.from(encoded, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const username = colon > 0 ? decoded.slice(0, colon) : '';
    const password = colon > 0 ? decoded.slice(colon + 1) : '';
    const user = this.options.basicUsers?.find((u) => u.username === username);
    const challenge = { headers: { 'www-authenticate': 'Basic realm="llm-gateway", charset="UTF-8"' } };
    if (!user) {
      await verifyPassword(password, DUMMY_HASH); // same cost for unknown users: no user enumeration by timing
      throw new GatewayError('invalid_credentials', {}, challenge);
    }
    const cacheKey = createHash('sha256')
      .update(`${username}\u0000${password}\u0000${user.passwordHash}`)
      .digest('base64');
    const now = this.now();
    const until = this.basicCache.get(cacheKey);
    if (until === undefined || until <= now) {
      if (!(await verifyPassword(password, user.passwordHash)))
        throw new GatewayError('invalid_credentials', {}, challenge);
      if (this.basicCache.size >= MAX_CACHED_KEYS) this.basicCache.clear();
      this.basicCache.set(cacheKey, now + BASIC_CACHE_MS);
    }
    return {
      caller: `basic:${user.username}`,
      kind: 'basic',
      routes: new Set(user.routes),
      ...(user.models.includes('*') ? {} : { models: new Set(user.models) }),
      mcpTools: user.mcpTools,
    };
  }

  /** Drops a key's cached record: a change made on this instance takes effect here at once (others within cacheMs). */
  forgetKey(keyId: string): void {
    this.cache.delete(keyId);
    // A lookup already on its way must not put the old record back: it sees the generation moved.
    if (this.forgotten.size >= MAX_CACHED_KEYS) this.forgotten.clear();
    this.forgotten.set(keyId, (this.forgotten.get(keyId) ?? 0) + 1);
  }

  private async record(keyId: string): Promise<ApiKeyRecord | undefined> {
    const cached = this.cache.get(keyId);
    const now = this.now();
    if (cached && now - cached.at < this.options.cacheMs) return cached.record;
    if (!this.options.keys) return undefined;
    const generation = this.forgotten.get(keyId);
    const record = await this.options.keys.get(keyId);
    if (this.forgotten.get(keyId) !== generation) return record; // changed meanwhile: used once, not cached
    if (this.cache.size >= MAX_CACHED_KEYS) this.cache.clear();
    this.cache.set(keyId, { record, at: now });
    return record;
  }
}

function principalOf(record: ApiKeyRecord): Principal {
  const limits: LimitSet | undefined = record.limits
    ? {
        requests:
          record.limits.requests_per_minute !== undefined
            ? { limit: record.limits.requests_per_minute, windowMs: 60_000 }
            : undefined,
        tokens:
          record.limits.tokens_per_minute !== undefined
            ? { limit: record.limits.tokens_per_minute, windowMs: 60_000 }
            : undefined,
        concurrent: record.limits.concurrent,
      }
    : undefined;
  return {
    caller: `key:${record.keyId}`,
    kind: 'key',
    routes: new Set(record.routes),
    ...(record.models.includes('*') ? {} : { models: new Set(record.models) }),
    ...(limits ? { limits } : {}),
    ...(record.budget ? { budget: budgetOf(record.budget) } : {}),
    // Default none: a key sees no tool until it is given some (keys stored before the field have none).
    mcpTools: record.mcpTools ?? [],
    ...(record.limits?.mcp_calls_per_minute !== undefined || record.limits?.mcp_concurrent !== undefined
      ? {
          mcpLimits: {
            callsPerMinute: record.limits.mcp_calls_per_minute,
            concurrent: record.limits.mcp_concurrent,
          },
        }
      : {}),
  };
}

function budgetOf(budget: NonNullable<ApiKeyRecord['budget']>): Budget {
  const windowMs = budget.period_seconds * 1000;
  return {
    ...(budget.tokens !== undefined ? { tokens: { limit: budget.tokens, windowMs } } : {}),
    ...(budget.cost_usd !== undefined ? { costMicros: { limit: Math.round(budget.cost_usd * 1e6), windowMs } } : {}),
  };
}
