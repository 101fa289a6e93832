import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import type { Authenticator } from '../auth/authenticator.js';
import { indexPage, prefersHtml } from '../http/pages.js';
import { makeV1Guard, type V1RouteTable } from '../http/v1-dispatch.js';
import type { StoredResponseHandlers } from './stored-responses.js';
import { checkKeyWriteQuery, createKeySchema, rotateKeySchema, type KeyHandlers } from './keys-routes.js';
import { assertValid } from '../http/bounded-validation.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/** A POST route of `/v1/`: its handler and its body's schema. */
export interface V1Call {
  handler: Handler;
  schema: object;
}

export interface V1Handlers {
  health: Handler;
  models: Handler;
  /** The model calls by route: each surface's `generate` (from the registry) and embeddings. */
  calls: ReadonlyMap<string, V1Call>;
  storedResponses: StoredResponseHandlers;
  keys: KeyHandlers;
}

/**
 * Checks a POST body against its route's schema, compiled once per schema by the gateway's validator compiler
 * (http/bounded-validation.ts, as a route schema is), and fails the way a route schema fails (a 400 naming each field).
 */
function postBodyValidator(calls: ReadonlyMap<string, V1Call>) {
  return async function validatePostBody(request: FastifyRequest): Promise<void> {
    const route = request.routeName;
    const rotate = (request.query as Record<string, unknown>).action === 'rotate';
    const schema = route === 'keys' ? (rotate ? rotateKeySchema : createKeySchema) : callOf(calls, route).schema;
    if (route === 'keys') checkKeyWriteQuery(request.query as Record<string, unknown>); // the query first: it decides which body is expected
    if (route === 'keys' && rotate && request.body === undefined) return; // a rotation may come without a body
    assertValid(request.compileValidationSchema(schema, 'body'), request.body);
  };
}

/** The call a POST route names (the guard answered every route without one: this falls back to chat's). */
function callOf(calls: ReadonlyMap<string, V1Call>, route: string | undefined): V1Call {
  const call = (route === undefined ? undefined : calls.get(route)) ?? calls.get('chat');
  if (!call) throw new GatewayError('method_not_allowed', {});
  return call;
}

/**
 * Mounts the v1 API on `/v1/` and on `/` (the latter serves v1 only to callers that ask for it by media type and
 * redirects everyone else). GET serves health, models and the index; POST serves the model calls, with their body
 * schemas, and the keys API.
 */
export function mountV1(
  app: FastifyInstance,
  auth: Authenticator,
  handlers: V1Handlers,
  version: string,
  table: V1RouteTable,
): void {
  const indexRoutes = [...table.values()];
  const handleIndex = async function handleIndex(request: FastifyRequest, reply: FastifyReply) {
    if (prefersHtml(request.headers.accept)) {
      return reply.type('text/html; charset=utf-8').send(indexPage(version, indexRoutes));
    }
    return reply.type(request.responseType).send({
      service: 'llm-gateway',
      version,
      api_version: 'v1',
      routes: indexRoutes.map((r) => ({
        route: r.route,
        path: `/v1/?route=${r.route}`,
        methods: r.methods,
        auth: r.auth,
        description: r.description,
      })),
    });
  };
  const handleRead = async function handleRead(request: FastifyRequest, reply: FastifyReply) {
    if (request.routeName === 'health') return handlers.health(request, reply);
    if (request.routeName === 'models') return handlers.models(request, reply);
    if (request.routeName === 'keys') return handlers.keys.read(request, reply);
    if (request.routeName === 'responses') {
      const view = (request.query as Record<string, unknown>).view;
      if (view === undefined) return handlers.storedResponses.retrieve(request, reply);
      if (view === 'input_items') return handlers.storedResponses.inputItems(request, reply);
      throw new GatewayError('invalid_query_parameter', { parameter: 'view', allowed: ['input_items'] });
    }
    return handleIndex(request, reply);
  };
  const handleOtherMethods = async function handleOtherMethods(
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<FastifyReply> {
    if (request.method === 'DELETE' && request.routeName === 'responses')
      return handlers.storedResponses.delete(request, reply);
    if (request.routeName === 'keys' && request.method === 'PATCH') return handlers.keys.update(request, reply);
    if (request.routeName === 'keys' && request.method === 'DELETE') return handlers.keys.revoke(request, reply);
    // The guard answers every other method (405, or 204 for OPTIONS) before this could run.
    throw new GatewayError('method_not_allowed', {});
  };

  const validatePostBody = postBodyValidator(handlers.calls);
  for (const [url, mount] of [
    ['/v1/', 'v1'],
    ['/', 'root'],
  ] as const) {
    const onRequest = makeV1Guard(auth, mount, table);
    app.get(url, { onRequest }, handleRead);
    app.post(url, { onRequest, preValidation: validatePostBody }, async (request, reply) => {
      const route = request.routeName;
      if (route === 'keys') return handlers.keys.write(request, reply);
      return callOf(handlers.calls, route).handler(request, reply);
    });
    app.route({ method: ['PUT', 'PATCH', 'DELETE', 'OPTIONS'], url, onRequest, handler: handleOtherMethods });
  }
}
