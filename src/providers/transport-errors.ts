import { GatewayError, isGatewayError } from '../errors/gateway-error.js';
import type { ErrorCode } from '../errors/codes.js';
import { ClientGoneError } from '../errors/client-gone.js';
import { SseLimitError } from '../streaming/sse-parser.js';

/**
 * Transport failure codes (undici's and the OS's) to our codes. Each timeout has its own code, as undici does
 * (UND_ERR_HEADERS_TIMEOUT vs UND_ERR_BODY_TIMEOUT), so an operator can tell a slow model from a dead socket.
 */
const TRANSPORT_CODES: Record<string, ErrorCode> = {
  UND_ERR_CONNECT_TIMEOUT: 'upstream_connect_timeout',
  UND_ERR_HEADERS_TIMEOUT: 'upstream_first_byte_timeout',
  UND_ERR_BODY_TIMEOUT: 'upstream_idle_timeout',
  ECONNREFUSED: 'upstream_unreachable',
  ENOTFOUND: 'upstream_unreachable',
  EAI_AGAIN: 'upstream_unreachable',
  EHOSTUNREACH: 'upstream_unreachable',
  ENETUNREACH: 'upstream_unreachable',
  ETIMEDOUT: 'upstream_connect_timeout',
  UND_ERR_SOCKET: 'upstream_connection_reset',
  ECONNRESET: 'upstream_connection_reset',
  EPIPE: 'upstream_connection_reset',
  UND_ERR_CLOSED: 'upstream_connection_reset',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'upstream_connection_reset',
  UND_ERR_RESPONSE_EXCEEDED_MAX_SIZE: 'upstream_invalid_response',
  UND_ERR_HEADERS_OVERFLOW: 'upstream_invalid_response',
};

/** Codes whose name alone would mislead an operator: what the upstream actually did. */
const TRANSPORT_REASONS: Record<string, string> = {
  UND_ERR_HEADERS_OVERFLOW:
    'the response header block is larger than the 16 KiB the gateway reads (UND_ERR_HEADERS_OVERFLOW)',
  UND_ERR_RESPONSE_EXCEEDED_MAX_SIZE:
    'the response body is larger than the gateway accepts (UND_ERR_RESPONSE_EXCEEDED_MAX_SIZE)',
};

/**
 * Turns anything thrown by an upstream call into the error the gateway reports. An aborted call reports why it
 * was aborted (the total deadline's GatewayError, or ClientGoneError), not the transport's view of the abort.
 */
export function toUpstreamError(error: unknown, upstream: string, signal: AbortSignal): Error {
  if (signal.aborted) {
    const reason: unknown = signal.reason;
    if (isGatewayError(reason) || reason instanceof ClientGoneError) return reason;
    if (reason instanceof Error && reason.name === 'TimeoutError') {
      return new GatewayError('upstream_total_timeout', { upstream }, { cause: error });
    }
  }
  if (isGatewayError(error) || error instanceof ClientGoneError) return error;
  if (error instanceof SseLimitError) {
    return new GatewayError('upstream_stream_malformed', {
      upstream,
      reason: error.message,
      limit_bytes: error.limitBytes,
    });
  }
  const code = transportCode(error);
  const mapped = code === undefined ? undefined : TRANSPORT_CODES[code];
  if (mapped && code !== undefined)
    return new GatewayError(mapped, { upstream, reason: TRANSPORT_REASONS[code] ?? code }, { cause: error });
  if (code !== undefined && /CERT|TLS|SSL/.test(code)) {
    return new GatewayError('upstream_unreachable', { upstream, reason: code }, { cause: error });
  }
  return new GatewayError('upstream_connection_reset', { upstream, reason: code ?? 'unknown' }, { cause: error });
}

function transportCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  const cause = (error as { cause?: unknown }).cause;
  return cause === undefined || cause === error ? undefined : transportCode(cause);
}
