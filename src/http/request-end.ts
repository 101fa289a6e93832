import type { FastifyInstance, FastifyRequest } from 'fastify';
import { redactUrl } from '../secrets/redact.js';
import { isObservedRoute } from '../request/route-name.js';
import { recordOf, type RequestRecord } from '../request/request-record.js';
import { USAGE_ANOMALIES } from '../providers/contract.js';

/** Looks at an API request (chat, models) once it ended: usage records, metrics, the trace's request span, events. */
export type RequestObserver = (record: RequestRecord) => void;

declare module 'fastify' {
  interface FastifyInstance {
    /** Called once per API request when it ends, however it ends (the app adds usage, metrics, tracing). */
    requestObservers: RequestObserver[];
  }
}

export function decorateRequestEnd(app: FastifyInstance): void {
  app.decorate('requestObservers', [] as RequestObserver[]);
}

/**
 * The end of every request, exactly once: the access line, then the observers of API requests. Called from
 * onResponse normally, and directly by the paths where the caller hung up (no response ever finishes there, so
 * Fastify's onResponse never runs): status 499 marks those, as in nginx. The URL's query values are redacted,
 * so a credential sent in a query string never reaches the log, whatever its parameter is named. Latency is
 * read once for the line and every observer.
 */
export function endRequest(request: FastifyRequest, status: number): void {
  if (request.accessLogged) return;
  request.accessLogged = true;
  const record = recordOf(request, status, performance.now() - request.receivedAt);
  logAccess(request, record);
  const observers = request.server.requestObservers;
  if (observers.length > 0 && isObservedRoute(record.route)) for (const observe of observers) observe(record);
}

/** The access line: one per request, from its record. */
function logAccess(request: FastifyRequest, record: RequestRecord): void {
  const usage = record.usage;
  // The root logger, with the id as a field: no per-request child logger is created for this line.
  request.server.log.info(
    {
      request_id: record.id,
      method: record.method,
      url: redactUrl(record.url),
      route: record.route,
      status: record.status,
      ms: Math.round(record.latencyMs * 100) / 100,
      caller: record.caller,
      model: record.model,
      upstream: record.upstream,
      // Flat fields (pino's fast path; a nested object goes through JSON.stringify).
      prompt_tokens: usage?.prompt_tokens,
      completion_tokens: usage?.completion_tokens,
      // The parts of those (docs/usage.md, "Token parts"); absent when the upstream reported none.
      cache_read_tokens: usage?.cache_read_tokens,
      cache_write_tokens: usage?.cache_write_tokens,
      cache_write_1h_tokens: usage?.cache_write_1h_tokens,
      reasoning_tokens: usage?.reasoning_tokens,
      cost_usd: usage?.cost_usd,
      // What prompt caching saved at the call's prices (negative when writes cost more than reads saved).
      cache_savings_usd: usage?.cache_savings_usd,
      // What the gateway corrected in the upstream's usage figures (docs/usage.md); absent when nothing.
      usage_anomaly: usage?.[USAGE_ANOMALIES],
      code: record.code,
      // The caller's fields a translation left out (X-Gateway-Dropped-Fields); absent when none. One string: flat.
      dropped_fields: request.droppedFields?.join(','),
      replay_not_stored: record.replayNotStored,
      cache: record.cacheResult,
    },
    'request',
  );
}

export const CLIENT_CLOSED_STATUS = 499;

/** The end of a request whose caller left before its answer was complete: `499 client_closed_request`, as in nginx. */
export function endClientGone(request: FastifyRequest): void {
  request.errorCode = 'client_closed_request';
  endRequest(request, CLIENT_CLOSED_STATUS);
}
