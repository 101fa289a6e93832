import type { FastifyInstance, FastifyRequest } from 'fastify';
import { redactUrl } from '../secrets/redact.js';
import { accessLineEnabled, scrubbedJson, writeAccessLine } from '../observability/logger.js';
import { isObservedRoute } from '../request/route-name.js';
import { recordOf, type RequestRecord } from '../request/request-record.js';
import { USAGE_ANOMALIES } from '../providers/provider-contract.js';

/** Looks at an API request (chat, models) once it ended: usage records, metrics, the trace's request span, events. */
export type RequestObserver = (record: RequestRecord) => void;

/**
 * Holds an answer's last bytes until what the request's observers recorded is durable, then calls `release` (the
 * usage spool: docs/usage.md, "Durability").
 */
export type AnswerHold = (release: () => void) => void;

declare module 'fastify' {
  interface FastifyInstance {
    /** Called once per API request when it ends, however it ends (the app adds usage, metrics, tracing). */
    requestObservers: RequestObserver[];
    /** Set when the usage records are spooled: the answer gate waits for it. */
    answerHold: AnswerHold | undefined;
    /** The routes whose requests are API calls the observers record: every route a caller can be given here. */
    observedRoutes: ReadonlySet<string>;
  }
}

export function decorateRequestEnd(app: FastifyInstance, observedRoutes: ReadonlySet<string>): void {
  app.decorate('requestObservers', [] as RequestObserver[]);
  app.decorate('answerHold', undefined);
  app.decorate('observedRoutes', observedRoutes);
}

/**
 * The answer gate: the request ends (its record made) before its answer's last bytes are written, and `release`
 * (which writes them) runs once that record is durable. A crash then never leaves an answer its caller received
 * without its record; it may leave a record of an answer the caller did not receive whole.
 */
export function endBeforeAnswer(request: FastifyRequest, status: number, release: () => void): void {
  endRequest(request, status);
  const hold = request.server.answerHold;
  if (hold) hold(release);
  else release();
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
  if (observers.length > 0 && isObservedRoute(record.route, request.server.observedRoutes))
    for (const observe of observers) observe(record);
}

/**
 * The access line: one per request, from its record, serialized by hand for its fixed fields (pino's generic
 * object walk and its whole-line secret scrub cost a visible share of a call's CPU, docs/benchmarks.md). The keys,
 * their order and their values are what `log.info({...}, 'request')` wrote: an absent field is left out, a number is
 * written as it is (a non-finite one as null), a string through JSON.stringify. The strings a caller or an
 * upstream can set (the id, URL, names, dropped fields, the replay reason) are scrubbed of the known secrets; the numbers
 * and the gateway's own enums (route, code, cache, usage anomalies) cannot hold one.
 */
function logAccess(request: FastifyRequest, record: RequestRecord): void {
  const log = request.server.log;
  if (!accessLineEnabled(log)) return;
  writeAccessLine(log, accessLineFields(log, record, request.droppedFields));
}

/** The access line's fields after pino's standard ones, as JSON text led by a comma (exported for its test). */
export function accessLineFields(log: object, record: RequestRecord, dropped: readonly string[] | undefined): string {
  const usage = record.usage;
  // The root logger, with the id as a field: no per-request child logger is created for this line.
  let line = `,"request_id":${scrubbedJson(log, record.id)},"method":${JSON.stringify(record.method)}`;
  line += `,"url":${scrubbedJson(log, redactUrl(record.url))}`;
  if (record.route !== undefined) line += `,"route":${JSON.stringify(record.route)}`;
  line += `,"status":${num(record.status)},"ms":${num(Math.round(record.latencyMs * 100) / 100)}`;
  line += `,"caller":${scrubbedJson(log, record.caller)}`;
  if (record.model !== undefined) line += `,"model":${scrubbedJson(log, record.model)}`;
  if (record.upstream !== undefined) line += `,"upstream":${scrubbedJson(log, record.upstream)}`;
  if (usage !== undefined) {
    line += numField('prompt_tokens', usage.prompt_tokens);
    line += numField('completion_tokens', usage.completion_tokens);
    // The parts of those (docs/usage.md, "Token parts"); absent when the upstream reported none.
    line += numField('cache_read_tokens', usage.cache_read_tokens);
    line += numField('cache_write_tokens', usage.cache_write_tokens);
    line += numField('cache_write_1h_tokens', usage.cache_write_1h_tokens);
    line += numField('reasoning_tokens', usage.reasoning_tokens);
    line += numField('cost_usd', usage.cost_usd);
    // What prompt caching saved at the call's prices (negative when writes cost more than reads saved).
    line += numField('cache_savings_usd', usage.cache_savings_usd);
    // What the gateway corrected in the upstream's usage figures (docs/usage.md); absent when nothing.
    const anomalies = usage[USAGE_ANOMALIES];
    if (anomalies !== undefined) line += `,"usage_anomaly":${JSON.stringify(anomalies)}`;
  }
  if (record.code !== undefined) line += `,"code":${JSON.stringify(record.code)}`;
  // The caller's fields a translation left out (X-Gateway-Dropped-Fields); absent when none.
  if (dropped !== undefined) line += `,"dropped_fields":${scrubbedJson(log, dropped.join(','))}`;
  if (record.replayNotStored !== undefined) line += `,"replay_not_stored":${scrubbedJson(log, record.replayNotStored)}`;
  if (record.cacheResult !== undefined) line += `,"cache":${JSON.stringify(record.cacheResult)}`;
  return line;
}

/** A number as pino writes it: as it is, or null when it is not finite. */
function num(value: number): string {
  return Number.isFinite(value) ? String(value) : 'null';
}

function numField(key: string, value: number | undefined): string {
  return value === undefined ? '' : `,"${key}":${num(value)}`;
}

export const CLIENT_CLOSED_STATUS = 499;

/** The end of a request whose caller left before its answer was complete: `499 client_closed_request`, as in nginx. */
export function endClientGone(request: FastifyRequest): void {
  request.errorCode = 'client_closed_request';
  endRequest(request, CLIENT_CLOSED_STATUS);
}
