import { AdminAuthenticator } from '../auth/admin-auth.js';
import { Authenticator } from '../auth/authenticator.js';
import { OAuthVerifier } from '../auth/oauth.js';
import type { GatewayConfig, OAuthConfig } from '../config/types.js';
import type { KeyStore } from '../store/store-contract.js';

/** The routes the app serves, and the OAuth scopes that grant them when the config names none. */
export interface ServedRoutes {
  routes: readonly string[];
  oauthScopes: Readonly<Record<string, string[]>>;
}

/** The verifier of the configured issuer's tokens, its scopes the config's or the served routes' defaults. */
export function oauthVerifier(oauth: OAuthConfig, served: ServedRoutes): OAuthVerifier {
  return new OAuthVerifier(oauth, oauth.scopes ?? served.oauthScopes);
}

/** Who may call: the admin tokens, scoped API keys (when a key store is given), Basic users, OAuth tokens. */
export function wireAuth(
  config: GatewayConfig,
  keys: KeyStore | undefined,
  served: ServedRoutes,
): { admin: AdminAuthenticator; auth: Authenticator } {
  const admin = new AdminAuthenticator(config.adminTokens);
  const auth = new Authenticator(admin, {
    environment: config.environment,
    keys,
    cacheMs: config.keyCacheMs,
    basicUsers: config.basicUsers,
    oauthTools: config.mcp.oauthTools,
    ...(config.oauth ? { oauth: oauthVerifier(config.oauth, served) } : {}),
  });
  return { admin, auth };
}
