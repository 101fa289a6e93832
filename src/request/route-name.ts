import { GRANTABLE_ROUTES, type GrantableRoute } from '../config/names.js';

/** The operations of `/v1/`, chosen by the `route` query parameter (SPEC "Endpoints"). */
export type ApiRoute = 'health' | 'keys' | GrantableRoute;

/**
 * What a request was dispatched to: an API route, the index of `/v1/`, the redirect of `/`, `/metrics`, or
 * Anthropic's token count (`/v1/messages/count_tokens`: the `messages` right, but no model call to record).
 */
export type RouteName = ApiRoute | 'index' | 'redirect' | 'metrics' | 'count_tokens';

/** Every route a key can be given is an API call (a new surface's route is observed by being grantable). */
const OBSERVED: ReadonlySet<RouteName> = new Set<GrantableRoute>(GRANTABLE_ROUTES);

/** The routes whose requests the observers record (usage, metrics, traces): the API calls, not pages or probes. */
export function isObservedRoute(route: RouteName | undefined): route is GrantableRoute {
  return route !== undefined && OBSERVED.has(route);
}
