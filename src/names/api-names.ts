/**
 * The names every layer needs of each API the gateway serves, in one table (docs/architecture.md, "Adding a
 * surface"): the route (the right a key or OAuth scope grants, what its calls are recorded as), the OAuth scope that
 * grants it by default, its webhook event kinds and the stage they start in, and whether providers may speak it
 * natively. Config (rights, scopes, event kinds), providers (`NativeApiName`) and surfaces (a descriptor's route)
 * read their lists and types from here. A surface that no other layer needs to name (no native provider, no event
 * kinds in a rollout stage) needs no entry: its descriptor's route and scope join these where it is mounted
 * (`grantableRoutes`, `defaultOAuthScopes`). The lowest layer: it imports nothing.
 */
export interface ApiNames {
  /** The route: a key's or a token's right, what its calls are recorded and limited as. */
  readonly route: string;
  /** The OAuth scope that grants the route by default; absent: `<route>:write`. */
  readonly scope?: string;
  /** Its webhook event kinds (docs/webhooks.md); absent: none. */
  readonly events?: readonly string[];
  /**
   * The rollout stage its kinds start in: `all` for the first release's, `canary` for a kind added after it
   * (docs/webhooks.md, "Rollout of event kinds").
   */
  readonly stage?: 'all' | 'canary';
  /** Whether a provider may speak it natively besides chat (a provider's `native: { <route> }`). */
  readonly native?: true;
}

/** Every API, in the order of the rights a key can be given (the dashboard's choices, error messages). */
export const API_NAMES = [
  { route: 'chat', events: ['chat.completed', 'chat.failed'], stage: 'all' },
  { route: 'models', scope: 'models:read' },
  { route: 'responses', events: ['response.completed', 'response.failed'], stage: 'all', native: true },
  { route: 'embeddings', events: ['embeddings.completed', 'embeddings.failed'], stage: 'all' },
  { route: 'messages', events: ['message.completed', 'message.failed'], stage: 'all', native: true },
  { route: 'gemini', events: ['gemini.completed', 'gemini.failed'], stage: 'canary', native: true },
  { route: 'files' },
  { route: 'vector_stores' },
  { route: 'batches', events: ['batch.completed', 'batch.failed', 'batch.cancelled'], stage: 'canary' },
  { route: 'mcp', events: ['mcp.tool_called', 'mcp.tool_failed'], stage: 'canary' },
] as const satisfies readonly ApiNames[];

type Api = (typeof API_NAMES)[number];

/** The API routes a scoped key, an OAuth scope or a Basic user can be given the right to call (health needs none). */
export type GrantableRoute = Api['route'];
export const GRANTABLE_ROUTES = API_NAMES.map((api) => api.route) as readonly GrantableRoute[] as readonly [
  GrantableRoute,
  ...GrantableRoute[],
];

/**
 * A route a surface is recorded as and a caller given: the table's, or one a surface declares in its descriptor alone
 * (checked where the app is built: the routes it serves are the table's and its mounted surfaces').
 */
export type RouteRight = GrantableRoute | (string & NonNullable<unknown>);

/**
 * What a route's name may be: a surface may declare one of its own in its descriptor alone (not in this table), so
 * config accepts any name of this form where it grants routes, and the app checks the names against the routes it
 * serves when it is built (config/route-check.ts).
 */
export const ROUTE_NAME = /^[a-z][a-z0-9_]{0,39}$/;

/**
 * Every route a key, an OAuth scope or a Basic user can be given in an app that mounts `surfaces`: the table's, then
 * each mounted surface's own (a surface whose route is not in the table declares it in its descriptor alone).
 */
export function grantableRoutes(surfaces: Iterable<{ readonly route: string }>): readonly string[] {
  const routes = new Set<string>(GRANTABLE_ROUTES);
  for (const surface of surfaces) routes.add(surface.route);
  return [...routes];
}

/** The APIs a provider may speak natively besides chat. */
export type NativeApiName = Extract<Api, { native: true }>['route'];

/** The OAuth scope that grants each route by default: its entry's `scope`, else `<route>:write`. */
export const DEFAULT_OAUTH_SCOPES: Readonly<Record<string, GrantableRoute[]>> = Object.fromEntries(
  API_NAMES.map((api: ApiNames) => [api.scope ?? `${api.route}:write`, [api.route as GrantableRoute]]),
);

/**
 * The OAuth scope that grants each route by default in an app that mounts `surfaces`: the table's, then each mounted
 * surface's own scope for its route when the table does not name that scope.
 */
export function defaultOAuthScopes(
  surfaces: Iterable<{ readonly route: string; readonly oauthScope: string }>,
): Record<string, string[]> {
  const scopes: Record<string, string[]> = structuredClone(DEFAULT_OAUTH_SCOPES) as Record<string, string[]>;
  for (const surface of surfaces) scopes[surface.oauthScope] ??= [surface.route];
  return scopes;
}

/** The event kinds the APIs' entries name that start in `stage`, in the table's order. */
export function apiEventKinds(stage: 'all' | 'canary'): string[] {
  return API_NAMES.flatMap((api: ApiNames) => (api.stage === stage ? [...(api.events ?? [])] : []));
}
