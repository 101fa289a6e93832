import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { ServerResponse } from 'node:http';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import type { Logger } from '../observability/logger.js';
import { lazyChildLogger } from '../observability/request-logger.js';
import { decorateRequestEnd, endRequest } from './request-end.js';
import { makeErrorHandler } from './error-handler.js';
import { registerJsonParser } from './json-body.js';
import { onClientError, onFrameworkError } from './malformed-requests.js';
import { refuseCredentialsInQuery } from './query-guard.js';
import { decorateRequestState } from './request-state.js';
import { allowedMethods } from './v1-dispatch.js';

/** A caller's X-Request-Id is kept when it is a plain token (so it cannot forge log fields); otherwise we make one. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface HttpServerOptions {
  logger: Logger;
  bodyLimitBytes: number;
  isShuttingDown: () => boolean;
  /** Serve HTTPS with this certificate (TLS 1.2 or newer only). */
  https?: { key: Buffer; cert: Buffer };
  /** Proxies whose X-Forwarded-Proto / X-Forwarded-For are believed (addresses or CIDRs). */
  trustedProxies?: string[];
}

/**
 * The Fastify instance with everything every request goes through, whatever its route: request ids, the
 * credentials-in-query guard, the one JSON parser, the one error handler, the access line, and our error shape
 * for requests Fastify or Node's parser reject before routing.
 */
export function createHttpServer(options: HttpServerOptions): FastifyInstance {
  const app = Fastify({
    ...(options.https ? { https: { key: options.https.key, cert: options.https.cert, minVersion: 'TLSv1.2' as const } } : {}),
    ...(options.trustedProxies && options.trustedProxies.length > 0 ? { trustProxy: options.trustedProxies } : {}),
    loggerInstance: options.logger as FastifyBaseLogger,
    // One access line per request, written in onResponse below, instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    childLoggerFactory: lazyChildLogger,
    frameworkErrors: onFrameworkError,
    clientErrorHandler: onClientError,
    bodyLimit: options.bodyLimitBytes,
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: true },
    ajv: { customOptions: { coerceTypes: false, allErrors: true, allowUnionTypes: true, removeAdditional: false, useDefaults: false } },
  });
  decorateRequestState(app);
  decorateRequestEnd(app);
  registerJsonParser(app, options.bodyLimitBytes);
  app.setErrorHandler(makeErrorHandler(options.bodyLimitBytes));
  app.setNotFoundHandler(notFound);

  app.addHook('onRequest', function everyRequest(request, reply, done) {
    request.receivedAt = performance.now();
    void reply.header('x-request-id', request.id);
    if (options.isShuttingDown()) void reply.header('connection', 'close');
    try {
      refuseCredentialsInQuery(request.url);
      done();
    } catch (error) {
      request.urlHasSecret = true;
      done(error as Error);
    }
  });
  app.addHook('onResponse', function requestEnded(request, reply, done) {
    endRequest(request, reply.statusCode);
    done();
  });
  closeQuietConnectionsOnClose(app, options.https !== undefined);
  return app;
}

function notFound(request: FastifyRequest): never {
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
        response.once('finish', () => socket.end());
      }
    }
    done();
  });
}
