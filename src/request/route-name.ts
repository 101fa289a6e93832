import type { GrantableRoute } from '../config/schema.js';

/** The operations of `/v1/`, chosen by the `route` query parameter (SPEC "Endpoints"). */
export type ApiRoute = 'health' | GrantableRoute;

/** What a request was dispatched to: an API route, the index of `/v1/`, the redirect of `/`, or `/metrics`. */
export type RouteName = ApiRoute | 'index' | 'redirect' | 'metrics';

/** The routes whose requests the observers record (usage, metrics, traces): the API calls, not pages or probes. */
export function isObservedRoute(route: RouteName | undefined): route is Exclude<ApiRoute, 'health'> {
  return route !== undefined && route !== 'health' && route !== 'index' && route !== 'redirect' && route !== 'metrics';
}
