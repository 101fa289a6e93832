import { AdminAuthenticator } from '../auth/admin-auth.js';
import { Authenticator } from '../auth/authenticator.js';
import { OAuthVerifier } from '../auth/oauth.js';
import type { GatewayConfig } from '../config/types.js';
import type { KeyStore } from '../store/store-contract.js';

/** Who may call: the admin tokens, scoped API keys (when a key store is given), Basic users, OAuth tokens. */
export function wireAuth(
  config: GatewayConfig,
  keys: KeyStore | undefined,
): { admin: AdminAuthenticator; auth: Authenticator } {
  const admin = new AdminAuthenticator(config.adminTokens);
  const auth = new Authenticator(admin, {
    environment: config.environment,
    keys,
    cacheMs: config.keyCacheMs,
    basicUsers: config.basicUsers,
    ...(config.oauth ? { oauth: new OAuthVerifier(config.oauth) } : {}),
  });
  return { admin, auth };
}
