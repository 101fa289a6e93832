import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import type { Authenticator } from '../auth/authenticator.js';
import { redirectPage, type RouteDescription } from './pages.js';
import { VENDOR_MEDIA_TYPE_V1, negotiateVersion } from './versioning.js';
import { closeIfBodyUnread } from './request-head.js';
import type { ApiRoute } from '../request/route-name.js';

interface RouteSpec extends RouteDescription {
  route: ApiRoute;
  admin: boolean;
}

/** The operations of `/v1/`, chosen by the `route` query parameter (SPEC "Endpoints"). */
export const ROUTE_TABLE: Readonly<Record<ApiRoute, RouteSpec>> = {
  health: { route: 'health', methods: ['GET', 'HEAD'], admin: false, auth: 'none', description: 'Service health' },
  models: {
    route: 'models',
    methods: ['GET', 'HEAD'],
    admin: true,
    auth: 'Bearer <ADMIN_TOKEN>',
    description: 'Models served (cursor pagination: limit, next_token)',
  },
  chat: {
    route: 'chat',
    methods: ['POST'],
    admin: true,
    auth: 'Bearer <ADMIN_TOKEN>',
    description: 'Chat completion (JSON, or SSE when stream is true); optional X-Upstream-Key',
  },
  responses: {
    route: 'responses',
    methods: ['POST', 'GET', 'DELETE'],
    admin: true,
    auth: 'Bearer <ADMIN_TOKEN>',
    description: 'OpenAI Responses API, translated for any upstream (POST; JSON, or typed SSE events when stream is true); GET or DELETE a stored one with id=<response id>, its inputs with &view=input_items',
  },
  messages: {
    route: 'messages',
    methods: ['POST'],
    admin: true,
    auth: 'Bearer <ADMIN_TOKEN> (or x-api-key)',
    description: "Anthropic's Messages API, translated for any upstream (JSON, or Anthropic's SSE events when stream is true)",
  },
  keys: {
    route: 'keys',
    methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'],
    admin: true,
    auth: 'Bearer <ADMIN_TOKEN> (the admin token only)',
    description: 'Scoped API keys: list (or one with id), create, rotate (id, action=rotate), change (PATCH), revoke (DELETE); docs/keys-api.md',
  },
  embeddings: {
    route: 'embeddings',
    methods: ['POST'],
    admin: true,
    auth: 'Bearer <ADMIN_TOKEN>',
    description: 'Embeddings (OpenAI shape; float or base64) from OpenAI-compatible and Gemini upstreams',
  },
};
const INDEX_METHODS = ['GET', 'HEAD'];
const ROUTE_NAMES = Object.keys(ROUTE_TABLE);

/**
 * Runs before the body is read (an onRequest hook), in this order: API version, route, method, authentication.
 * So a wrong method is a 405 even with a huge or malformed body, and no body is parsed for an unauthenticated
 * caller. `mount: 'root'` is `/`: served as v1 only when the Accept header asks for our v1 media type, and
 * otherwise redirected to `/v1/` (302 for GET/HEAD, 308 so other methods keep their method and body).
 */
export function makeV1Guard(auth: Authenticator, mount: 'v1' | 'root') {
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
    if (!Object.hasOwn(ROUTE_TABLE, route)) {
      throw new GatewayError('route_not_found', { route: route.slice(0, 100), routes: ROUTE_NAMES });
    }
    const spec = ROUTE_TABLE[route as ApiRoute];
    request.routeName = spec.route;
    const answered = checkMethod(request, reply, spec.methods);
    if (answered) return answered;
    if (spec.admin) {
      const principal = await auth.authenticate(request.headers.authorization, spec.route, request.protocol === 'https');
      request.caller = principal.caller;
      request.principal = principal;
    }
    return undefined;
  };
}

/** The methods a `/v1/` URL accepts, for a 405 raised outside the guard (methods Fastify has no route for). */
export function allowedMethods(route: unknown): readonly string[] {
  if (typeof route === 'string' && Object.hasOwn(ROUTE_TABLE, route)) return ROUTE_TABLE[route as ApiRoute].methods;
  return INDEX_METHODS;
}

function checkMethod(request: FastifyRequest, reply: FastifyReply, methods: readonly string[]): FastifyReply | undefined {
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
