/** The environments a gateway runs in (GATEWAY_ENV). */
export const ENVIRONMENTS = ['dev', 'staging', 'prod'] as const;

// The routes, their default OAuth scopes and the APIs' event kinds are the names table's (names/api-names.ts): a
// surface declares its own there (a surface's descriptor names the same scope: test/surfaces/surface-registry.test.ts).
export { DEFAULT_OAUTH_SCOPES, GRANTABLE_ROUTES } from '../names/api-names.js';
export type { GrantableRoute } from '../names/api-names.js';
export type GatewayEnvironment = (typeof ENVIRONMENTS)[number];
