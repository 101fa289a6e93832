import type { Socket } from 'node:net';
import { STATUS_CODES } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, isGatewayError } from '../errors/gateway-error.js';
import { refuseCredentialsInQuery } from './query-guard.js';

/**
 * Requests Fastify rejects before routing (a URL with invalid percent-encoding) still get our error shape, a
 * request id and the credentials check, and their URL is never echoed (Fastify's default message quotes it).
 */
export function onFrameworkError(error: Error, request: FastifyRequest, reply: FastifyReply): void {
  request.receivedAt = performance.now();
  let failure = new GatewayError('bad_request', { reason: 'the URL is not valid (bad percent-encoding)' }, { cause: error });
  try {
    refuseCredentialsInQuery(request.url);
  } catch (refused) {
    request.urlHasSecret = true;
    if (isGatewayError(refused)) failure = refused;
  }
  request.errorCode = failure.code;
  void reply.header('x-request-id', request.id).code(failure.status).type('application/json; charset=utf-8').send(failure.toBody());
}

const PARSER_REASONS: Record<string, string> = {
  HPE_INVALID_CONTENT_LENGTH: 'the Content-Length header is invalid',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'Content-Length and Transfer-Encoding must not both be sent',
  HPE_INVALID_TRANSFER_ENCODING: 'the Transfer-Encoding header is invalid',
  HPE_HEADER_OVERFLOW: 'the request headers are too large',
  HPE_INVALID_METHOD: 'the method is not valid HTTP',
  HPE_INVALID_URL: 'the URL is not valid',
};

/**
 * Errors of Node's HTTP parser happen before any request object exists, so the answer is written on the socket
 * by hand: still `{code, message, details}`, then the connection is closed (its framing cannot be trusted).
 */
export function onClientError(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const code = error.code ?? 'unknown';
  const failure =
    code === 'HPE_HEADER_OVERFLOW'
      ? new GatewayError('headers_too_large', { reason: PARSER_REASONS[code] })
      : new GatewayError('bad_request', { reason: PARSER_REASONS[code] ?? 'the HTTP request is malformed', parser_code: code });
  const body = JSON.stringify(failure.toBody());
  socket.end(
    `HTTP/1.1 ${failure.status} ${STATUS_CODES[failure.status] ?? 'Bad Request'}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
