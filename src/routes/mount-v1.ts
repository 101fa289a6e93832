import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import type { Authenticator } from '../auth/authenticator.js';
import { indexPage, prefersHtml } from '../http/pages.js';
import { ROUTE_TABLE, makeV1Guard } from '../http/v1-dispatch.js';
import { chatBodySchema } from './chat-schema.js';
import { responsesBodySchema } from '../surfaces/responses/responses-schema.js';
import type { StoredResponseHandlers } from './stored-responses.js';
import { checkKeyWriteQuery, createKeySchema, rotateKeySchema, type KeyHandlers } from './keys.js';
import { embeddingsBodySchema } from './embeddings-schema.js';
import { messagesBodySchema } from '../surfaces/messages/messages-schema.js';
import { assertValid } from '../http/bounded-validation.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

export interface V1Handlers {
  health: Handler;
  models: Handler;
  chat: Handler;
  responses: Handler;
  messages: Handler;
  embeddings: Handler;
  storedResponses: StoredResponseHandlers;
  keys: KeyHandlers;
}

/** The body schema of each POST route of `/v1/` (one URL serves them all, so the route picks the schema). */
const POST_SCHEMAS = { chat: chatBodySchema, responses: responsesBodySchema, messages: messagesBodySchema, embeddings: embeddingsBodySchema } as const;

/**
 * Checks a POST body against its route's schema, compiled once per schema by the gateway's validator compiler
 * (http/bounded-validation.ts, as a route schema is), and fails the way a route schema fails (a 400 naming each field).
 */
async function validatePostBody(request: FastifyRequest): Promise<void> {
  const route = request.routeName;
  const rotate = (request.query as Record<string, unknown>).action === 'rotate';
  const schema =
    route === 'keys' ? (rotate ? rotateKeySchema : createKeySchema) : route === 'responses' || route === 'embeddings' || route === 'messages' ? POST_SCHEMAS[route] : POST_SCHEMAS.chat;
  if (route === 'keys') checkKeyWriteQuery(request.query as Record<string, unknown>); // the query first: it decides which body is expected
  if (route === 'keys' && rotate && request.body === undefined) return; // a rotation may come without a body
  assertValid(request.compileValidationSchema(schema, 'body'), request.body);
}

/**
 * Mounts the v1 API on `/v1/` and on `/` (the latter serves v1 only to callers that ask for it by media type and
 * redirects everyone else). GET serves health, models and the index; POST serves chat, with the body schema.
 */
export function mountV1(app: FastifyInstance, auth: Authenticator, handlers: V1Handlers, version: string): void {
  const indexRoutes = Object.values(ROUTE_TABLE);
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
  const handleOtherMethods = async function handleOtherMethods(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    if (request.method === 'DELETE' && request.routeName === 'responses') return handlers.storedResponses.delete(request, reply);
    if (request.routeName === 'keys' && request.method === 'PATCH') return handlers.keys.update(request, reply);
    if (request.routeName === 'keys' && request.method === 'DELETE') return handlers.keys.revoke(request, reply);
    // The guard answers every other method (405, or 204 for OPTIONS) before this could run.
    throw new GatewayError('method_not_allowed', {});
  };

  for (const [url, mount] of [['/v1/', 'v1'], ['/', 'root']] as const) {
    const onRequest = makeV1Guard(auth, mount);
    app.get(url, { onRequest }, handleRead);
    app.post(url, { onRequest, preValidation: validatePostBody }, async (request, reply) => {
      const route = request.routeName;
      if (route === 'responses' || route === 'embeddings' || route === 'messages') return handlers[route](request, reply);
      if (route === 'keys') return handlers.keys.write(request, reply);
      return handlers.chat(request, reply);
    });
    app.route({ method: ['PUT', 'PATCH', 'DELETE', 'OPTIONS'], url, onRequest, handler: handleOtherMethods });
  }
}
