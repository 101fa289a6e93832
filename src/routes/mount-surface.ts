import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import type { ChatService } from '../core/pipeline/chat-service.js';
import type { EmbeddingService } from '../core/pipeline/embedding-service.js';
import type { TokenCountService } from '../core/pipeline/token-count-service.js';
import type { ModelCatalog } from '../core/models/model-catalog.js';
import { GatewayError } from '../errors/gateway-error.js';
import { assertValid } from '../http/bounded-validation.js';
import type { RouteName } from '../request/route-name.js';
import type { SurfaceDeps, SurfaceDescriptor, SurfaceEndpoint } from '../surfaces/descriptor.js';
import type { ApiSurface } from '../surfaces/surface.js';
import { makeSurfaceCallHandler, type PipelineDeps } from './surface-call.js';
import { makeCountTokensHandler } from './count-tokens-route.js';
import { makeEmbeddingsHandler } from './embeddings-route.js';
import { makeSurfaceModelsHandlers } from './models-route.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;
type Guard = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/** What mounting a surface needs: the app's services, built once. */
export interface SurfaceMountDeps {
  auth: Authenticator;
  chat: ChatService;
  tokens: TokenCountService;
  embeddings: EmbeddingService;
  catalog: ModelCatalog;
  /** The pipeline's parts (every surface's the same; whether an answer's text is kept is each surface's own). */
  pipeline: Omit<PipelineDeps, 'captureAnswer'>;
  /** Whether some webhook subscription wants the content of events of this kind. */
  wantsContent(kind: string): boolean;
  /** What its translation may need (`forwards` asks about its own native API). */
  translationDeps: SurfaceDeps;
}

/** A mounted surface: what `/v1/?route=` and the shared models paths serve of it. */
export interface MountedSurface {
  readonly descriptor: SurfaceDescriptor;
  readonly translation: ApiSurface;
  /** Its `generate` handler and body schema (`?route=<route>` serves them when the descriptor says so). */
  readonly generate?: { handler: Handler; schema: object };
  /** Its models API, for `GET /v1/models[/{id}]` when its API claims the call (by the caller's headers). */
  readonly models?: SharedModels;
}

/** A surface's side of the shared models paths: its guard (its credentials, rights, error shape) and handlers. */
export interface SharedModels {
  claims(request: FastifyRequest): boolean;
  guard: Guard;
  list: Handler;
  get: Handler;
}

/**
 * Mounts one surface from its descriptor: each endpoint on its path and method, behind a guard that takes the
 * surface's credentials (`credential`), checks its right (`rights`, else the surface's route), names the request's
 * route and error shape, and stamps the request-id header its SDKs quote; the body checked by the endpoint's schema;
 * the handler the endpoint's operation calls for (the chat pipeline with the surface's translation, a token count,
 * embeddings, the models list). Endpoints that share a method and path (Google's `{model}:action`) are one route
 * that picks by the action. An `exclusive` path answers any other method 405 with Allow.
 */
export function mountSurface(
  app: FastifyInstance,
  descriptor: SurfaceDescriptor,
  deps: SurfaceMountDeps,
): MountedSurface {
  const translation = descriptor.translation(deps.translationDeps);
  const handlers = new HandlerCache(descriptor, translation, deps);
  const groups = new Map<string, SurfaceEndpoint[]>();
  for (const endpoint of descriptor.endpoints) {
    const key = `${endpoint.method} ${endpoint.path}`;
    groups.set(key, [...(groups.get(key) ?? []), endpoint]);
  }
  for (const endpoints of groups.values()) mountGroup(app, descriptor, endpoints, handlers, deps.auth);
  refuseOtherMethods(app, descriptor.endpoints);
  const generate = descriptor.endpoints.find((e) => e.operation === 'generate');
  const models = descriptor.models;
  const modelsRights = models?.rights;
  return {
    descriptor,
    translation,
    ...(generate ? { generate: { handler: handlers.of(generate), schema: generate.bodySchema ?? {} } } : {}),
    ...(models && modelsRights
      ? {
          models: {
            claims: (request: FastifyRequest) => descriptor.api.claims(request.url, request.headers),
            guard: guardOf(descriptor, deps.auth, 'models', modelsRights),
            ...makeSurfaceModelsHandlers(deps.catalog, models),
          },
        }
      : {}),
  };
}

/** One handler per operation of a surface (the pipeline of `generate` is shared by its path and `?route=`). */
class HandlerCache {
  private readonly made = new Map<string, Handler>();

  constructor(
    private readonly descriptor: SurfaceDescriptor,
    private readonly translation: ApiSurface,
    private readonly deps: SurfaceMountDeps,
  ) {}

  of(endpoint: SurfaceEndpoint): Handler {
    let handler = this.made.get(endpoint.operation);
    if (!handler) {
      handler = this.make(endpoint);
      this.made.set(endpoint.operation, handler);
    }
    return handler;
  }

  private make(endpoint: SurfaceEndpoint): Handler {
    const { descriptor, translation, deps } = this;
    const { chat, pipeline, catalog } = deps;
    const missing = (field: string) =>
      new Error(
        `the ${descriptor.route} surface has a ${endpoint.operation} endpoint but no ${field} in its descriptor`,
      );
    switch (endpoint.operation) {
      case 'generate':
        return makeSurfaceCallHandler(descriptor, translation, {
          ...pipeline,
          captureAnswer: deps.wantsContent(descriptor.events.completed),
        });
      case 'count_tokens':
        if (!descriptor.tokenCount) throw missing('tokenCount');
        return makeCountTokensHandler(deps.tokens, chat, descriptor, descriptor.tokenCount, translation);
      case 'embed':
        if (!descriptor.embeddings) throw missing('embeddings');
        return makeEmbeddingsHandler({
          embeddings: deps.embeddings,
          chat,
          idempotency: pipeline.idempotency,
          beginTrace: pipeline.beginTrace,
          cache: pipeline.cache,
          surface: { descriptor, spec: descriptor.embeddings },
        });
      case 'list_models':
      case 'get_model': {
        if (!descriptor.models) throw missing('models');
        const models = makeSurfaceModelsHandlers(catalog, descriptor.models);
        return endpoint.operation === 'list_models' ? models.list : models.get;
      }
    }
  }
}

/** The guard of a surface's path: its error shape and route name, its request-id header, its credentials and rights. */
function guardOf(
  descriptor: SurfaceDescriptor,
  auth: Authenticator,
  routeName: RouteName,
  rights: string | readonly string[],
): Guard {
  const { credential, requestIdHeader } = descriptor;
  const { errors } = descriptor.api;
  return async function surfaceGuard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    request.errorShape = errors;
    request.routeName = routeName;
    if (requestIdHeader !== undefined) void reply.header(requestIdHeader, request.id);
    const sent = credential(request.headers);
    let principal;
    try {
      principal = await auth.authenticate(sent, rights, request.protocol === 'https');
    } catch (error) {
      throw namingKeyHeader(error, sent, request.headers);
    }
    request.caller = principal.caller;
    request.principal = principal;
  };
}

/**
 * A refused key its client sent in its own header (`x-api-key`, `x-goog-api-key`), not as a bearer token: the 401
 * says so, and names the header (the registry's message speaks of a bearer token).
 */
function namingKeyHeader(error: unknown, sent: string | undefined, headers: FastifyRequest['headers']): unknown {
  if (!(error instanceof GatewayError) || error.code !== 'invalid_token' || sent === undefined) return error;
  if (sent === headers.authorization) return error;
  const header = headers['x-api-key'] !== undefined ? 'x-api-key' : 'x-goog-api-key';
  return new GatewayError(
    'invalid_token',
    { ...error.details, header },
    {
      message: `The key sent in the ${header} header is not valid for this gateway.`,
      ...(error.headers ? { headers: error.headers } : {}),
    },
  );
}

function endpointGuard(descriptor: SurfaceDescriptor, endpoint: SurfaceEndpoint, auth: Authenticator): Guard {
  // One right is passed as itself (no array per request), as the route guards always did.
  const rights = endpoint.rights ?? descriptor.route;
  return guardOf(
    descriptor,
    auth,
    endpoint.routeName ?? descriptor.route,
    rights.length === 1 && typeof rights !== 'string' ? (rights[0] as string) : rights,
  );
}

function mountGroup(
  app: FastifyInstance,
  descriptor: SurfaceDescriptor,
  endpoints: readonly SurfaceEndpoint[],
  handlers: HandlerCache,
  auth: Authenticator,
): void {
  const [first] = endpoints as [SurfaceEndpoint];
  if (endpoints.length === 1 && first.action === undefined) {
    app.route({
      method: first.method,
      url: first.path,
      onRequest: endpointGuard(descriptor, first, auth),
      ...(first.bodySchema ? { schema: { body: first.bodySchema } } : {}),
      handler: handlers.of(first),
    });
    return;
  }
  // One route for the path, the endpoint picked by the action its last parameter ends with (`gemini-x:countTokens`).
  const param = /:(\w+)$/.exec(first.path)?.[1];
  if (param === undefined || endpoints.some((e) => e.action === undefined)) {
    throw new Error(
      `the ${descriptor.route} surface declares ${first.method} ${first.path} more than once: give each an action, and end the path with a parameter`,
    );
  }
  const byAction = new Map(
    endpoints.map((e) => [
      e.action as string,
      { endpoint: e, guard: endpointGuard(descriptor, e, auth), handler: handlers.of(e) },
    ]),
  );
  const actions = [...byAction.keys()];
  const pick = (request: FastifyRequest) => {
    const value = (request.params as Record<string, string | undefined>)[param] ?? '';
    const picked = byAction.get(value.slice(value.lastIndexOf(':') + 1));
    if (!picked || !value.includes(':')) {
      throw new GatewayError('not_found', { path: request.url.split('?')[0]?.slice(0, 200), actions });
    }
    return picked;
  };
  app.route({
    method: first.method,
    url: first.path,
    onRequest: async (request, reply) => pick(request).guard(request, reply),
    preValidation: async (request) => {
      const { bodySchema } = pick(request).endpoint;
      if (bodySchema) assertValid(request.compileValidationSchema(bodySchema, 'body'), request.body);
    },
    handler: async (request, reply) => pick(request).handler(request, reply),
  });
}

const REFUSABLE = ['GET', 'PUT', 'PATCH', 'DELETE'] as const;

/** Each `exclusive` path answers the methods it does not take with 405 and Allow (HEAD follows GET). */
function refuseOtherMethods(app: FastifyInstance, endpoints: readonly SurfaceEndpoint[]): void {
  const paths = new Map<string, Set<string>>();
  for (const e of endpoints) if (e.exclusive === true) paths.set(e.path, new Set());
  for (const e of endpoints) paths.get(e.path)?.add(e.method);
  for (const [url, taken] of paths) {
    const allowed = [...taken];
    app.route({
      method: REFUSABLE.filter((method) => !taken.has(method)),
      url,
      handler: async (request) => {
        throw new GatewayError(
          'method_not_allowed',
          { method: request.method, allowed },
          { headers: { allow: allowed.join(', ') } },
        );
      },
    });
  }
}
