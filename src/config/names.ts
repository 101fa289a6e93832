/** The environments a gateway runs in (GATEWAY_ENV). */
export const ENVIRONMENTS = ['dev', 'staging', 'prod'] as const;

/** The API routes a scoped key, an OAuth scope or a Basic user can be given the right to call (health needs none). */
const CALL_ROUTES = ['chat', 'models', 'responses', 'embeddings', 'messages', 'gemini'] as const;
export const GRANTABLE_ROUTES = [...CALL_ROUTES, 'files', 'batches'] as const;
export type GrantableRoute = (typeof GRANTABLE_ROUTES)[number];

/**
 * The OAuth scope that grants each route by default: `<route>:write`, and `models:read` for the models list (a
 * surface's descriptor names the same scope: test/surface-registry.test.ts checks they agree).
 */
export const DEFAULT_OAUTH_SCOPES: Readonly<Record<string, GrantableRoute[]>> = Object.fromEntries(
  GRANTABLE_ROUTES.map((route) => [route === 'models' ? 'models:read' : `${route}:write`, [route]]),
);
export type GatewayEnvironment = (typeof ENVIRONMENTS)[number];
