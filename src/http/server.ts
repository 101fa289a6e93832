import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { ServerResponse } from 'node:http';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import type { Logger } from '../observability/logger.js';
import { lazyChildLogger } from '../observability/request-logger.js';
import { decorateRequestEnd, endBeforeAnswer, endRequest } from './request-end.js';
import { makeErrorHandler } from './error-handler.js';
import { registerJsonParser } from './json-body.js';
import { boundedValidatorCompiler } from './bounded-validation.js';
import { MAX_PATH_SEGMENT, clientErrorHandler, frameworkErrorHandler } from './malformed-requests.js';
import { refuseCredentialsInQuery } from './query-guard.js';
import { checkRequestHead } from './request-head.js';
import { dropRequestsAfterRefusal } from './lingering-close.js';
import { continueOnFirstRead } from './expect-continue.js';
import { decoratePublicOrigin } from './public-origin.js';
import { decorateRequestState } from '../request/request-state.js';
import { isObservedRoute } from '../request/route-name.js';
import { GRANTABLE_ROUTES } from '../names/api-names.js';
import { allowedMethods, v1RouteTable, type V1RouteTable } from './v1-dispatch.js';
import { OPENAI_ERRORS, OPENAI_NOT_FOUND_MESSAGE, OPENAI_PATHS, openAiPathMethods } from './openai-shape.js';
import { CallerApis, GATEWAY_ERRORS } from './error-shape.js';

/** A caller's X-Request-Id is kept when it is a plain token (so it cannot forge log fields); otherwise we make one. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface HttpServerOptions {
  logger: Logger;
  bodyLimitBytes: number;
  /** The longest a caller may take to send one whole request (headers and body): then 408 and the socket closes. */
  requestTimeoutMs: number;
  isShuttingDown: () => boolean;
  /** Serve HTTPS with this certificate (TLS 1.2 or newer only). */
  https?: { key: Buffer; cert: Buffer };
  /** Proxies whose X-Forwarded-Proto / X-Forwarded-For are believed (addresses or CIDRs). */
  trustedProxies?: string[];
  /** `server.public_base_url`: where the URLs the gateway gives out point (http/public-origin.ts). */
  publicBaseUrl?: string | undefined;
  /**
   * The public APIs whose paths are served (built from the surface registry by the wiring): which request is whose,
   * its error shape and its own query names. Without them every answer has the gateway's own shape.
   */
  apis?: CallerApis;
  /** The `/v1/` route table (for the 405 of a method no route serves); without it the gateway's own routes only. */
  v1Routes?: V1RouteTable;
  /**
   * Every route a caller can be given (the names table's and the mounted surfaces' own): the API calls whose records
   * the observers see. Without it the names table's.
   */
  routes?: readonly string[];
}

/**
 * The Fastify instance with everything every request goes through, whatever its route: request ids, the
 * credentials-in-query guard, the one JSON parser, the one error handler, the access line, and our error shape
 * for requests Fastify or Node's parser reject before routing.
 */
export function createHttpServer(options: HttpServerOptions): FastifyInstance {
  const apis = options.apis ?? new CallerApis([]);
  const v1Routes = options.v1Routes ?? v1RouteTable([]);
  const app = Fastify({
    ...(options.https
      ? { https: { key: options.https.key, cert: options.https.cert, minVersion: 'TLSv1.2' as const } }
      : {}),
    ...(options.trustedProxies && options.trustedProxies.length > 0 ? { trustProxy: options.trustedProxies } : {}),
    loggerInstance: options.logger as FastifyBaseLogger,
    // One access line per request, written in onResponse below, instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    childLoggerFactory: lazyChildLogger,
    frameworkErrors: frameworkErrorHandler(apis),
    clientErrorHandler: clientErrorHandler(apis),
    bodyLimit: options.bodyLimitBytes,
    return503OnClosing: false,
    // Model ids may be 256 characters, and a default upstream's even longer: find-my-way's default (100) made
    // `/v1/models/<a long id>` a 400 instead of a 404.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_SEGMENT },
  });
  // Every schema is compiled by our own Ajv: the first problem cheaply, all of them only on a bounded view.
  app.setValidatorCompiler(boundedValidatorCompiler());
  configureNodeServer(app, options.requestTimeoutMs);
  dropRequestsAfterRefusal(app.server);
  continueOnFirstRead(app.server);
  decorateRequestState(app);
  decoratePublicOrigin(app, options.publicBaseUrl);
  decorateRequestEnd(app, new Set(options.routes ?? GRANTABLE_ROUTES));
  registerJsonParser(app, options.bodyLimitBytes);
  app.setErrorHandler(makeErrorHandler(options.bodyLimitBytes));
  const notFound = notFoundOf(v1Routes);
  app.setNotFoundHandler(notFound);

  app.addHook('onRequest', function everyRequest(request, reply, done) {
    request.receivedAt = performance.now();
    void reply.header('x-request-id', request.id);
    if (options.isShuttingDown()) void reply.header('connection', 'close');
    // Every answer on an OpenAI-shaped path (/v1/<anything>) carries OpenAI's `error` object too, a 404 included,
    // so the SDKs show our message instead of "404 status code (no body)"; /v1/messages carries Anthropic's.
    const api = apis.of(request.url, request.headers);
    request.errorShape = api.errors;
    try {
      refuseCredentialsInQuery(request.url, api);
      checkRequestHead(request.raw);
      // Answered here, before Fastify would read (and wait for) the body of a request to nowhere.
      if (request.is404) notFound(request);
      done();
    } catch (error) {
      done(error as Error);
    }
  });
  // The answer gate (docs/usage.md, "Durability"): an API call's record is made (and spooled) as its answer is handed
  // to the socket, and its bytes are written once the record is durable, so that no answer a caller has received is
  // left without a record by a crash. A stream is ended the same way before its last frame (routes/surface-call.ts).
  // A body sent as a stream (a file's content) is ended when it has been sent, as before.
  app.addHook('onSend', function answerGate(request, reply, payload, done) {
    const whole = typeof payload === 'string' || payload instanceof Uint8Array || payload == null;
    if (whole && isObservedRoute(request.routeName, app.observedRoutes))
      endBeforeAnswer(request, reply.statusCode, () => done(null, payload));
    else done(null, payload);
  });
  app.addHook('onResponse', function requestEnded(request, reply, done) {
    endRequest(request, reply.statusCode);
    done();
  });
  closeQuietConnectionsOnClose(app, options.https !== undefined);
  return app;
}

function notFoundOf(v1Routes: V1RouteTable) {
  return function notFound(request: FastifyRequest): never {
    const q = request.url.indexOf('?');
    const path = q === -1 ? request.url : request.url.slice(0, q);
    if (path === '/' || path === '/v1' || path === '/v1/') {
      // A method Fastify has no route for at all (TRACE, PROPFIND...) on a real path: 405, not 404.
      const methods = allowedMethods(v1Routes, (request.query as Record<string, unknown>).route);
      throw new GatewayError(
        'method_not_allowed',
        { method: request.method, allowed: methods },
        { headers: { allow: [...methods, 'OPTIONS'].join(', ') } },
      );
    }
    // A drop-in path called with another method: 405 with Allow, in the caller's shape (Anthropic's on /v1/models
    // for an Anthropic client).
    const methods = request.errorShape === GATEWAY_ERRORS ? undefined : openAiPathMethods(path);
    if (methods) {
      throw new GatewayError(
        'method_not_allowed',
        { method: request.method, allowed: methods },
        { headers: { allow: methods.join(', ') } },
      );
    }
    if (request.errorShape === OPENAI_ERRORS) {
      throw new GatewayError(
        'not_found',
        { path: path.slice(0, 200), openai_paths: OPENAI_PATHS, api: '/v1/' },
        { message: OPENAI_NOT_FOUND_MESSAGE },
      );
    }
    throw new GatewayError('not_found', { path: path.slice(0, 200), api: '/v1/' });
  };
}

/**
 * A caller that sends its headers or body slowly (one byte every few seconds) would hold a socket forever:
 * Node's `requestTimeout` bounds the whole request, headers and body, and a connection that has not sent a
 * complete request in time gets a 408 (malformed-requests.ts) and is closed. Node checks its connections on a
 * sweep every `connectionsCheckingInterval` (30 s by default, so up to twice the timeout): checked more often
 * here, so a request is cut at most a second after its time (a new connection that sends nothing counts as a
 * request that never arrives). A connection idle between requests is bounded by the keep-alive timeout instead.
 * Node's own bare 400 for a missing Host header is turned off: ours (request-head.ts) has a body.
 */
function configureNodeServer(app: FastifyInstance, requestTimeoutMs: number): void {
  const server = app.server as typeof app.server & { requireHostHeader: boolean; connectionsCheckingInterval: number };
  server.requestTimeout = requestTimeoutMs;
  server.headersTimeout = Math.min(server.headersTimeout, requestTimeoutMs);
  server.connectionsCheckingInterval = Math.min(1000, Math.max(100, Math.floor(requestTimeoutMs / 4)));
  server.requireHostHeader = false;
}

/**
 * On close, connections with no request in progress are ended at once, and those with one are ended once it is
 * answered. Node's own closeIdleConnections skips a connection that has never sent a request (a browser's
 * speculative pre-connect, an HTTP client's spare socket), and one whose request was in progress when the close
 * began stays in keep-alive afterwards: the server would wait for either until its keep-alive timeout (72 s)
 * before it could exit. One listener per connection; nothing per request.
 */
function closeQuietConnectionsOnClose(app: FastifyInstance, https: boolean): void {
  const sockets = new Set<Socket>();
  app.server.on(https ? 'secureConnection' : 'connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  app.addHook('preClose', (done) => {
    for (const socket of sockets) {
      // `_httpMessage` is the response being written on this socket (Node's http server sets and clears it).
      const response = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
      if (response == null) {
        socket.destroy();
      } else {
        // A request in progress finishes, then its connection closes (instead of idling in keep-alive).
        response.shouldKeepAlive = false;
        // end() alone would leave it half-closed for as long as the peer keeps its side open (as after a 408).
        response.once('finish', () => socket.end(() => socket.destroy()));
      }
    }
    done();
  });
}
