import type { Socket } from 'node:net';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, isGatewayError } from '../errors/gateway-error.js';
import { GATEWAY_ERRORS, shapedError, type CallerApis } from './error-shape.js';
import { refuseCredentialsInQuery } from './query-guard.js';
import { closeIfBodyUnread } from './request-head.js';

/** Longest path segment the router takes (find-my-way's `maxParamLength`); see server.ts. */
export const MAX_PATH_SEGMENT = 1024;

/** What Fastify's router refuses before routing, in words (FST_ERR_BAD_URL, FST_ERR_MAX_PARAM_LENGTH). */
const FRAMEWORK_REASONS: Record<string, Record<string, unknown>> = {
  FST_ERR_BAD_URL: { reason: 'the URL is not valid (bad percent-encoding)' },
  FST_ERR_MAX_PARAM_LENGTH: {
    reason: `a path segment is longer than ${MAX_PATH_SEGMENT} characters`,
    max_segment_length: MAX_PATH_SEGMENT,
  },
};

/**
 * Requests Fastify rejects before routing (a URL with invalid percent-encoding, a path segment too long) still
 * get our error shape (that of the API whose path it is, by the URL alone), a request id and the credentials
 * check, and their URL is never echoed (Fastify's default message quotes it).
 */
export function frameworkErrorHandler(apis: CallerApis) {
  return function onFrameworkError(
    error: Error & { code?: string },
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    request.receivedAt = performance.now();
    const api = apis.of(request.url, undefined);
    request.errorShape = api.errors;
    const details = FRAMEWORK_REASONS[error.code ?? ''] ?? { reason: 'the URL could not be routed' };
    let failure = new GatewayError('bad_request', details, { cause: error });
    try {
      refuseCredentialsInQuery(request.url, api);
    } catch (refused) {
      if (isGatewayError(refused)) failure = refused;
    }
    request.errorCode = failure.code;
    closeIfBodyUnread(request, reply);
    const body = shapedError(failure.toBody(), failure.status, request.errorShape);
    void reply
      .header('x-request-id', request.id)
      .code(failure.status)
      .type('application/json; charset=utf-8')
      .send(body);
  };
}

/**
 * Node's parser codes, in words. llhttp reports two different faults under one code, told apart by its reason:
 * HPE_UNEXPECTED_CONTENT_LENGTH is a repeated Content-Length, and Content-Length with Transfer-Encoding is
 * HPE_INVALID_TRANSFER_ENCODING ("Transfer-Encoding can't be present with Content-Length").
 */
const PARSER_REASONS: Record<string, string> = {
  HPE_INVALID_CONTENT_LENGTH: 'the Content-Length header is invalid',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'the Content-Length header is sent more than once',
  HPE_INVALID_TRANSFER_ENCODING: 'the Transfer-Encoding header is invalid',
  HPE_HEADER_OVERFLOW: 'the request headers are too large',
  HPE_INVALID_METHOD: 'the method is not valid HTTP',
  HPE_INVALID_URL: 'the URL is not valid',
};
const BOTH_LENGTHS = 'Content-Length and Transfer-Encoding must not both be sent (RFC 9112 section 6.1)';

type ServerSocket = Socket & {
  /** The response being written on this socket, if any (Node's http server sets and clears it). */
  _httpMessage?: ServerResponse | null;
  /** Node's HTTP parser of this connection; `incoming` is the request being received. */
  parser?: { incoming?: IncomingMessage | null } | null;
};

/** Requests cut by the request timeout while their body was being read, so their access line says 408. */
export const timedOutRequests = new WeakSet<IncomingMessage>();

/**
 * Errors of Node's HTTP parser happen before any request object exists, and a request that did not arrive in
 * time (`requestTimeout`, server.ts) may be half read: the answer is written on the socket by hand, still
 * `{code, message, details}` (plus OpenAI's `error` on /v1/<path>), then the connection is closed (its framing
 * cannot be trusted, or its sender is too slow). If an answer has already started on this socket, nothing more
 * can be written there: the socket is just closed.
 */
export function clientErrorHandler(apis: CallerApis) {
  return function onClientError(
    error: Error & { code?: string; reason?: string; rawPacket?: unknown },
    socket: ServerSocket,
  ): void {
    if (!socket.writable || error.code === 'ECONNRESET' || socket._httpMessage?.headersSent === true) {
      socket.destroy();
      return;
    }
    const failure = describeClientError(error);
    const incoming = socket.parser?.incoming;
    if (incoming && failure.code === 'request_timeout') timedOutRequests.add(incoming);
    const url = incoming?.url ?? requestTarget(error.rawPacket);
    const answer = shapedError(
      failure.toBody(),
      failure.status,
      url === undefined ? GATEWAY_ERRORS : apis.of(url, undefined).errors,
    );
    const body = JSON.stringify(answer);
    socket.end(
      `HTTP/1.1 ${failure.status} ${STATUS_CODES[failure.status] ?? 'Bad Request'}\r\n` +
        'content-type: application/json; charset=utf-8\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
    // end() only half-closes: a peer that never closes its own side (a silent or hostile caller) would keep the
    // socket open in FIN-WAIT-2 for as long as it likes (50 silent callers held 50 sockets past 95 s). Once the
    // answer is flushed the socket is destroyed, as Node's own destroySoon() does after a `connection: close` answer.
    socket.once('finish', () => socket.destroy());
  };
}

function describeClientError(error: Error & { code?: string; reason?: string }): GatewayError {
  const code = error.code ?? 'unknown';
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new GatewayError('request_timeout', { reason: 'the request headers and body were not received in time' });
  if (code === 'HPE_HEADER_OVERFLOW') return new GatewayError('headers_too_large', { reason: PARSER_REASONS[code] });
  const bothLengths = code === 'HPE_INVALID_TRANSFER_ENCODING' && /content-length/i.test(error.reason ?? '');
  return new GatewayError('bad_request', {
    reason: bothLengths ? BOTH_LENGTHS : (PARSER_REASONS[code] ?? 'the HTTP request is malformed'),
    parser_code: code,
  });
}

/** The request target of the request line at the start of a raw packet, if it is there. */
function requestTarget(packet: unknown): string | undefined {
  if (!Buffer.isBuffer(packet)) return undefined;
  return /^[A-Z]+ (\S+) HTTP\//.exec(packet.subarray(0, 2048).toString('latin1'))?.[1];
}
