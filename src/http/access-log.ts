import type { FastifyRequest } from 'fastify';
import { redactUrl } from '../observability/redact.js';

/**
 * The one access line per request: written from onResponse normally, and directly by the paths where the caller
 * hung up (no response ever finishes there, so Fastify's onResponse never runs). Status 499 marks those, as in
 * nginx. The URL is redacted, so a credential sent in a query string never reaches the log.
 */
export function logAccess(request: FastifyRequest, status: number): void {
  if (request.accessLogged) return;
  request.accessLogged = true;
  // The root logger, with the id as a field: no per-request child logger is created for this line.
  request.server.log.info(
    {
      request_id: request.id,
      method: request.method,
      url: request.urlHasSecret ? redactUrl(request.url) : request.url,
      route: request.routeName,
      status,
      ms: Math.round((performance.now() - request.receivedAt) * 100) / 100,
      caller: request.caller,
      model: request.chatModel,
      upstream: request.upstreamName,
      // Flat fields (pino's fast path; a nested object goes through JSON.stringify).
      prompt_tokens: request.usage?.prompt_tokens,
      completion_tokens: request.usage?.completion_tokens,
      cost_usd: request.usage?.cost_usd,
      code: request.errorCode,
    },
    'request',
  );
}

export const CLIENT_CLOSED_STATUS = 499;
