import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { GatewayConfig } from './config/types.js';
import { ChatService } from './core/chat-service.js';
import { HealthService } from './core/health-service.js';
import { ModelCatalog } from './core/model-catalog.js';
import { ModelRouter } from './core/model-router.js';
import { UpstreamProbe } from './core/upstream-probe.js';
import { GatewayError } from './errors/gateway-error.js';
import { logAccess } from './http/access-log.js';
import { onClientError, onFrameworkError } from './http/malformed-requests.js';
import { AdminAuthenticator } from './http/admin-auth.js';
import { makeErrorHandler } from './http/error-handler.js';
import { registerJsonParser } from './http/json-body.js';
import { indexPage, prefersHtml } from './http/pages.js';
import { refuseCredentialsInQuery } from './http/query-guard.js';
import { decorateRequestState } from './http/request-state.js';
import { ROUTE_TABLE, allowedMethods, makeV1Guard } from './http/v1-dispatch.js';
import type { Logger } from './observability/logger.js';
import { lazyChildLogger } from './observability/request-logger.js';
import { createProviders, type ProviderSet } from './providers/registry.js';
import { makeChatHandler } from './routes/chat.js';
import { chatBodySchema } from './routes/chat-schema.js';
import { makeHealthHandler } from './routes/health.js';
import { makeModelsHandler } from './routes/models.js';
import type { StoreLifecycle } from './store/contract.js';

export interface AppDependencies {
  config: GatewayConfig;
  logger: Logger;
  store: StoreLifecycle;
  /** Built from config when not given (tests may pass their own). */
  providers?: ProviderSet;
}

export interface GatewayApp {
  app: FastifyInstance;
  /** Marks the gateway as draining: health turns 503 and responses ask clients to close their connections. */
  beginShutdown(): void;
}

/** A caller's X-Request-Id is kept when it is a plain token (so it cannot forge log fields); otherwise we make one. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Builds the HTTP application from its dependencies. Nothing runs at import time and nothing here reads the
 * environment: the caller (main.ts or a test) decides every input.
 */
export async function buildApp(deps: AppDependencies): Promise<GatewayApp> {
  const { config, logger } = deps;
  const providers = deps.providers ?? createProviders(config);
  let shuttingDown = false;

  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // One access line per request, written in onResponse below, instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    childLoggerFactory: lazyChildLogger,
    frameworkErrors: onFrameworkError,
    clientErrorHandler: onClientError,
    bodyLimit: config.bodyLimitBytes,
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: true },
    ajv: { customOptions: { coerceTypes: false, allErrors: true, allowUnionTypes: true, removeAdditional: false, useDefaults: false } },
  });
  decorateRequestState(app);
  registerJsonParser(app, config.bodyLimitBytes);
  app.setErrorHandler(makeErrorHandler(config.bodyLimitBytes));
  app.setNotFoundHandler(function notFound(request: FastifyRequest) {
    const q = request.url.indexOf('?');
    const path = q === -1 ? request.url : request.url.slice(0, q);
    if (path === '/' || path === '/v1' || path === '/v1/') {
      // A method Fastify has no route for at all (TRACE, PROPFIND...) on a real path: 405, not 404.
      const methods = allowedMethods((request.query as Record<string, unknown>).route);
      throw new GatewayError(
        'method_not_allowed',
        { method: request.method, allowed: methods },
        { headers: { allow: [...methods, 'OPTIONS'].join(', ') } },
      );
    }
    throw new GatewayError('not_found', { path: path.slice(0, 200), api: '/v1/' });
  });

  app.addHook('onRequest', function everyRequest(request, reply, done) {
    request.receivedAt = performance.now();
    void reply.header('x-request-id', request.id);
    if (shuttingDown) void reply.header('connection', 'close');
    try {
      refuseCredentialsInQuery(request.url);
      done();
    } catch (error) {
      request.urlHasSecret = true;
      done(error as Error);
    }
  });
  app.addHook('onResponse', function logResponse(request, reply, done) {
    logAccess(request, reply.statusCode);
    done();
  });
  app.addHook('onClose', async () => {
    await providers.close();
  });

  const auth = new AdminAuthenticator(config.adminTokens);
  const router = new ModelRouter(config, providers);
  const probes = [...providers.upstreams.values()].map((p) => new UpstreamProbe(p));
  const defaultProbe = probes.find((p) => p.provider.name === config.defaultUpstream);
  const health = new HealthService({
    version: config.version,
    environment: config.environment,
    store: deps.store,
    probes,
    isShuttingDown: () => shuttingDown,
  });
  const handlers = {
    health: makeHealthHandler(health),
    models: makeModelsHandler(new ModelCatalog(config, defaultProbe)),
    chat: makeChatHandler(new ChatService(router), config.bodyLimitBytes),
  };
  const indexRoutes = Object.values(ROUTE_TABLE);
  const indexHandler = async function handleIndex(request: FastifyRequest, reply: FastifyReply) {
    if (prefersHtml(request.headers.accept)) {
      return reply.type('text/html; charset=utf-8').send(indexPage(config.version, indexRoutes));
    }
    return reply.type(request.responseType).send({
      service: 'llm-gateway',
      version: config.version,
      api_version: 'v1',
      routes: indexRoutes.map((r) => ({ route: r.route, path: `/v1/?route=${r.route}`, methods: r.methods, auth: r.auth, description: r.description })),
    });
  };
  const readHandler = async function handleRead(request: FastifyRequest, reply: FastifyReply) {
    if (request.routeName === 'health') return handlers.health(request, reply);
    if (request.routeName === 'models') return handlers.models(request, reply);
    return indexHandler(request, reply);
  };
  const unreachable = async function handleOtherMethods(): Promise<never> {
    // The guard answers every other method (405 or OPTIONS) before this could run.
    throw new GatewayError('method_not_allowed', {});
  };

  for (const [url, mount] of [['/v1/', 'v1'], ['/', 'root']] as const) {
    const onRequest = makeV1Guard(auth, mount);
    app.get(url, { onRequest }, readHandler);
    app.post(url, { onRequest, schema: { body: chatBodySchema } }, handlers.chat);
    app.route({ method: ['PUT', 'PATCH', 'DELETE', 'OPTIONS'], url, onRequest, handler: unreachable });
  }

  return {
    app,
    beginShutdown() {
      shuttingDown = true;
    },
  };
}
