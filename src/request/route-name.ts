import type { RouteRight } from '../names/api-names.js';

/** The operations of `/v1/`, chosen by the `route` query parameter (SPEC "Endpoints"). */
export type ApiRoute = 'health' | 'keys' | RouteRight;

/**
 * What a request was dispatched to: an API route, the index of `/v1/`, the redirect of `/`, `/metrics`, or
 * Anthropic's token count (`/v1/messages/count_tokens`: the `messages` right, but no model call to record).
 */
export type RouteName = ApiRoute | 'index' | 'redirect' | 'metrics' | 'count_tokens';

/**
 * The routes whose requests the observers record (usage, metrics, traces): the API calls, not pages or probes.
 * `observed` is every route a key can be given in this app (the names table's and the mounted surfaces' own), so
 * a new surface's route is observed by being mounted.
 */
export function isObservedRoute(route: RouteName | undefined, observed: ReadonlySet<string>): route is RouteRight {
  return route !== undefined && observed.has(route);
}
