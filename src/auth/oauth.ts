import type * as Jose from 'jose';
import type { createRemoteJWKSet, JWTPayload } from 'jose';
import { GatewayError } from '../errors/gateway-error.js';
import type { OAuthConfig } from '../config/types.js';
import type { Principal } from './principal.js';

const CHALLENGE = (error: string) => ({
  headers: { 'www-authenticate': `Bearer realm="llm-gateway", error="${error}"` },
});

/** A compact JWS (three base64url parts); only such tokens are tried as OAuth access tokens. */
export function looksLikeJwt(token: string): boolean {
  return token.startsWith('eyJ') && token.split('.').length === 3;
}

/**
 * OAuth 2.0 access tokens (JWT, RFC 9068) from one configured issuer, as issued through the Client Credentials or
 * Authorization Code flows: signature against the issuer's JWKS (cached; an unknown `kid` triggers a refresh, at
 * most one per cooldown), `iss`, `aud`, `exp`, `nbf` checked with a small clock tolerance, and the scopes mapped
 * to routes. Each refusal is a 401 with its own code.
 */
export class OAuthVerifier {
  private jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  // jose is loaded at the first token, not at start: a configuration without OAuth never loads it (a part
  // of a worker's idle footprint).
  private jose: Promise<typeof Jose> | undefined;

  constructor(
    private readonly config: OAuthConfig,
    /** Scope -> the routes it grants: the config's, or the defaults of the routes the app serves. */
    private readonly scopes: Readonly<Record<string, readonly string[]>>,
  ) {}

  /** The issuer its tokens come from (`iss`): the authorization server the protected-resource metadata names. */
  get issuer(): string {
    return this.config.issuer;
  }

  /** The scopes that grant `route`, sorted (the protected-resource metadata's `scopes_supported`). */
  scopesGranting(route: string): string[] {
    return Object.entries(this.scopes)
      .filter(([, routes]) => routes.includes(route))
      .map(([scope]) => scope)
      .sort();
  }

  async verify(token: string): Promise<Principal> {
    const { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } = await (this.jose ??= import('jose'));
    this.jwks ??= createRemoteJWKSet(new URL(this.config.jwksUrl), {
      cooldownDuration: this.config.jwksCooldownMs,
      cacheMaxAge: 10 * 60_000,
      timeoutDuration: 5_000,
    });
    let alg: string | undefined;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      throw new GatewayError('invalid_token', { reason: 'the JWT header cannot be read' }, CHALLENGE('invalid_token'));
    }
    if (alg === undefined || alg === 'none' || alg.startsWith('HS') || !this.config.algorithms.includes(alg)) {
      throw new GatewayError(
        'token_algorithm_not_allowed',
        { alg: alg ?? null, allowed: this.config.algorithms },
        CHALLENGE('invalid_token'),
      );
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.jwks, {
        issuer: this.config.issuer,
        audience: this.config.audience,
        algorithms: this.config.algorithms,
        clockTolerance: this.config.clockToleranceSeconds,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (error) {
      throw refusal(error);
    }
    const granted = String(payload.scope ?? payload.scp ?? '')
      .split(/[\s,]+/)
      .filter(Boolean);
    const routes = new Set(granted.flatMap((scope) => this.scopes[scope] ?? []));
    return { caller: `oauth:${String(payload.sub)}`, kind: 'oauth', routes };
  }
}

function refusal(error: unknown): GatewayError {
  const e = error as { code?: string; claim?: string; reason?: string };
  switch (e.code) {
    case 'ERR_JWT_EXPIRED':
      return new GatewayError('token_expired', {}, CHALLENGE('invalid_token'));
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (e.claim === 'nbf' || e.claim === 'iat')
        return new GatewayError('token_not_yet_valid', { claim: e.claim }, CHALLENGE('invalid_token'));
      return new GatewayError(
        'token_claim_invalid',
        { claim: e.claim ?? null, reason: e.reason ?? null },
        CHALLENGE('invalid_token'),
      );
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return new GatewayError('token_key_unknown', {}, CHALLENGE('invalid_token'));
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return new GatewayError('token_algorithm_not_allowed', {}, CHALLENGE('invalid_token'));
    case 'ERR_JWKS_TIMEOUT':
    case 'ERR_JOSE_GENERIC':
      return new GatewayError('oauth_jwks_unavailable', {}, { cause: error });
    default:
      return new GatewayError(
        'invalid_token',
        { reason: 'the token signature or format is not valid' },
        CHALLENGE('invalid_token'),
      );
  }
}
