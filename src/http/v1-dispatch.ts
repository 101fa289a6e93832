import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import type { Authenticator } from '../auth/authenticator.js';
import { redirectPage, type RouteDescription } from './pages.js';
import { VENDOR_MEDIA_TYPE_V1, negotiateVersion } from './versioning.js';
import { closeIfBodyUnread } from './request-head.js';
import type { ApiRoute } from '../request/route-name.js';
import type { RouteRight } from '../names/api-names.js';

export interface RouteSpec extends RouteDescription {
  route: ApiRoute;
  admin: boolean;
}

/** A `?route=` entry an API surface adds (its descriptor's `v1Route`): admin-authenticated, like every model call. */
export interface SurfaceRoute extends RouteDescription {
  route: RouteRight;
}

/** The operations of `/v1/` that are the gateway's own, before and after the surfaces' (the index lists them in this order). */
const OWN_BEFORE: readonly RouteSpec[] = [
  { route: 'health', methods: ['GET', 'HEAD'], admin: false, auth: 'none', description: 'Service health' },
  {
    route: 'models',
    methods: ['GET', 'HEAD'],
    admin: true,
    auth: 'Bearer <ADMIN_TOKEN>',
    description: 'Models served (cursor pagination: limit, next_token)',
  },
];
const OWN_AFTER: readonly RouteSpec[] = [
  {
    route: 'keys',
    methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'],
    admin: true,
    auth: 'Bearer <ADMIN_TOKEN> (the admin token only)',
    description:
      'Scoped API keys: list (or one with id), create, rotate (id, action=rotate), change (PATCH), revoke (DELETE); docs/keys-api.md',
  },
  {
    route: 'embeddings',
    methods: ['POST'],
    admin: true,
    auth: 'Bearer <ADMIN_TOKEN>',
    description: 'Embeddings (OpenAI shape; float or base64) from OpenAI-compatible and Gemini upstreams',
  },
];

/** The operations of `/v1/`, chosen by the `route` query parameter (SPEC "Endpoints"), in the index's order. */
export type V1RouteTable = ReadonlyMap<string, RouteSpec>;

/** The `/v1/` table: health and models, then each surface's entry (the registry's order), then keys and embeddings. */
export function v1RouteTable(surfaces: readonly SurfaceRoute[]): V1RouteTable {
  const specs = [...OWN_BEFORE, ...surfaces.map((s): RouteSpec => ({ ...s, admin: true })), ...OWN_AFTER];
  return new Map(specs.map((spec) => [spec.route, spec]));
}
const INDEX_METHODS = ['GET', 'HEAD'];

/**
 * Runs before the body is read (an onRequest hook), in this order: API version, route, method, authentication.
 * So a wrong method is a 405 even with a huge or malformed body, and no body is parsed for an unauthenticated
 * caller. `mount: 'root'` is `/`: served as v1 only when the Accept header asks for our v1 media type, and
 * otherwise redirected to `/v1/` (302 for GET/HEAD, 308 so other methods keep their method and body).
 */
export function makeV1Guard(auth: Authenticator, mount: 'v1' | 'root', table: V1RouteTable) {
  const names = [...table.keys()];
  return async function v1Guard(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const version = negotiateVersion(request.headers.accept);
    if (mount === 'root' && version === undefined) return redirectToV1(request, reply);
    if (version !== undefined) request.responseType = `${VENDOR_MEDIA_TYPE_V1}; charset=utf-8`;

    const route = (request.query as Record<string, unknown>).route;
    if (route === undefined || route === '') {
      request.routeName = 'index';
      return checkMethod(request, reply, INDEX_METHODS);
    }
    if (typeof route !== 'string') {
      throw new GatewayError('invalid_query_parameter', { parameter: 'route', problem: 'must be given once' });
    }
    const spec = table.get(route);
    if (spec === undefined) {
      throw new GatewayError('route_not_found', { route: route.slice(0, 100), routes: names });
    }
    request.routeName = spec.route;
    const answered = checkMethod(request, reply, spec.methods);
    if (answered) return answered;
    if (spec.admin) {
      const principal = await auth.authenticate(
        request.headers.authorization,
        spec.route,
        request.protocol === 'https',
      );
      request.caller = principal.caller;
      request.principal = principal;
    }
    return undefined;
  };
}

/** The methods a `/v1/` URL accepts, for a 405 raised outside the guard (methods Fastify has no route for). */
export function allowedMethods(table: V1RouteTable, route: unknown): readonly string[] {
  return (typeof route === 'string' ? table.get(route)?.methods : undefined) ?? INDEX_METHODS;
}

function checkMethod(
  request: FastifyRequest,
  reply: FastifyReply,
  methods: readonly string[],
): FastifyReply | undefined {
  if (methods.includes(request.method)) return undefined;
  const allow = [...methods, 'OPTIONS'].join(', ');
  if (request.method === 'OPTIONS') {
    closeIfBodyUnread(request, reply);
    return reply.code(204).header('allow', allow).send();
  }
  throw new GatewayError('method_not_allowed', { method: request.method, allowed: methods }, { headers: { allow } });
}

function redirectToV1(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const q = request.url.indexOf('?');
  const location = `/v1/${q === -1 ? '' : request.url.slice(q)}`;
  const safeMethod = request.method === 'GET' || request.method === 'HEAD';
  request.routeName = 'redirect';
  closeIfBodyUnread(request, reply);
  return reply
    .code(safeMethod ? 302 : 308)
    .header('location', location)
    .type('text/html; charset=utf-8')
    .send(redirectPage(location));
}
