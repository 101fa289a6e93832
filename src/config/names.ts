/** The environments a gateway runs in (GATEWAY_ENV). */
export const ENVIRONMENTS = ['dev', 'staging', 'prod'] as const;

// The routes, their default OAuth scopes and the APIs' event kinds are the names table's (names/api-names.ts); an app
// adds those of the surfaces it mounts whose route is their own (the config's grants are checked when it is built).
export { DEFAULT_OAUTH_SCOPES, GRANTABLE_ROUTES } from '../names/api-names.js';
export type { GrantableRoute } from '../names/api-names.js';
export type GatewayEnvironment = (typeof ENVIRONMENTS)[number];
