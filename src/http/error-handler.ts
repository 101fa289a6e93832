import { shapedError } from './error-shape.js';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, isGatewayError } from '../errors/gateway-error.js';
import { CLIENT_CLOSED_STATUS, endClientGone, endRequest } from './request-end.js';
import { ClientGoneError } from '../errors/client-gone.js';
import { describeViolations, type SchemaViolation } from './validation-details.js';
import { closeIfBodyUnread } from './request-head.js';
import { timedOutRequests } from './malformed-requests.js';

/**
 * Every error leaves in one shape, whoever raised it: our GatewayErrors as they are, Fastify's own errors mapped
 * to our codes, and anything unexpected as `internal_error` with no message or stack of its own (those go to
 * the log, tied to the request id).
 */
export function toGatewayError(error: unknown, bodyLimitBytes: number): GatewayError {
  if (isGatewayError(error)) return error;
  const fastifyError = error as Partial<FastifyError> & { validation?: SchemaViolation[] };
  if (Array.isArray(fastifyError.validation)) {
    const where = fastifyError.validationContext ?? 'body';
    return new GatewayError('validation_failed', describeViolations(fastifyError.validation, where));
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError('unsupported_media_type', { accepted: ['application/json'] });
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('payload_too_large', { limit_bytes: bodyLimitBytes });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new GatewayError('invalid_json', { reason: 'the body is empty' });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new GatewayError('invalid_header', { header: 'content-length', reason: 'does not match the body' });
    case 'FST_ERR_BAD_URL':
      return new GatewayError('bad_request', { reason: 'the URL is not valid (bad percent-encoding)' });
    default:
      return new GatewayError('internal_error', {}, { cause: error });
  }
}

const REQUEST_TIMEOUT_STATUS = 408;

/** The request's body stopped arriving because its connection closed (the caller left, or the timeout cut it). */
function bodyCutShort(error: unknown, request: FastifyRequest): boolean {
  return (error as { code?: unknown }).code === 'ECONNRESET' && !request.raw.complete;
}

export function makeErrorHandler(bodyLimitBytes: number) {
  return function handleError(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
    if (error instanceof ClientGoneError || bodyCutShort(error, request)) {
      // Nobody is listening any more: record it for the access log and send nothing meaningful. A body cut by
      // the request timeout was answered 408 on the socket already (malformed-requests.ts).
      if (timedOutRequests.has(request.raw)) {
        request.errorCode = 'request_timeout';
        endRequest(request, REQUEST_TIMEOUT_STATUS);
        void reply.code(REQUEST_TIMEOUT_STATUS).send();
      } else {
        endClientGone(request);
        void reply.code(CLIENT_CLOSED_STATUS).send();
      }
      return;
    }
    const gatewayError = toGatewayError(error, bodyLimitBytes);
    request.errorCode = gatewayError.code;
    request.errorDetails = gatewayError.details;
    request.retryAfterMs = gatewayError.retryAfterMs;
    if (gatewayError.code === 'internal_error') {
      request.log.error({ err: error, code: gatewayError.code }, 'unexpected error');
    } else if (gatewayError.status >= 500) {
      // An upstream or configuration condition, not a bug: no stack, just what happened.
      request.log.warn({ code: gatewayError.code, details: gatewayError.details }, gatewayError.message);
    }
    if (gatewayError.headers) void reply.headers(gatewayError.headers);
    closeIfBodyUnread(request, reply);
    const body = gatewayError.toBody();
    void reply
      .code(gatewayError.status)
      .type(request.responseType)
      .send(shapedError(body, gatewayError.status, request.errorShape, gatewayError.headers));
  };
}
