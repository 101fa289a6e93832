/**
 * The names every layer needs of each API the gateway serves, in one table (docs/architecture.md, "Adding a
 * surface"): the route (the right a key or OAuth scope grants, what its calls are recorded as), the OAuth scope that
 * grants it by default, its webhook event kinds and the stage they start in, and whether providers may speak it
 * natively. Config (rights, scopes, event kinds), providers (`NativeApiName`) and surfaces (a descriptor's route)
 * read their lists and types from here, so a new surface is its own entry here, its folders and its descriptor.
 * The lowest layer: it imports nothing.
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
  { route: 'batches', events: ['batch.completed', 'batch.failed', 'batch.cancelled'], stage: 'canary' },
] as const satisfies readonly ApiNames[];

type Api = (typeof API_NAMES)[number];

/** The API routes a scoped key, an OAuth scope or a Basic user can be given the right to call (health needs none). */
export type GrantableRoute = Api['route'];
export const GRANTABLE_ROUTES = API_NAMES.map((api) => api.route) as readonly GrantableRoute[] as readonly [
  GrantableRoute,
  ...GrantableRoute[],
];

/** The APIs a provider may speak natively besides chat. */
export type NativeApiName = Extract<Api, { native: true }>['route'];

/** The OAuth scope that grants each route by default: its entry's `scope`, else `<route>:write`. */
export const DEFAULT_OAUTH_SCOPES: Readonly<Record<string, GrantableRoute[]>> = Object.fromEntries(
  API_NAMES.map((api: ApiNames) => [api.scope ?? `${api.route}:write`, [api.route as GrantableRoute]]),
);

/** The event kinds the APIs' entries name that start in `stage`, in the table's order. */
export function apiEventKinds(stage: 'all' | 'canary'): string[] {
  return API_NAMES.flatMap((api: ApiNames) => (api.stage === stage ? [...(api.events ?? [])] : []));
}
