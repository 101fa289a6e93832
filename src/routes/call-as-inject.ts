import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import { principalFromSnapshot } from '../auth/principal.js';
import type { CallAs, CallResult } from '../core/pipeline/call-as.js';
import { isGatewayError } from '../errors/gateway-error.js';
import type { RequestRecord } from '../request/request-record.js';

/** Anthropic's API version a Messages call is sent with (a native Anthropic upstream wants one). */
const ANTHROPIC_VERSION = '2023-06-01';

/**
 * The surfaces' typed entry into the request pipeline (`CallAs`): the call is handed to the app's route for its URL
 * in-process (Fastify's `inject`: no socket, no port) with a one-call ticket that authenticates as the owner
 * (`Authenticator.delegate`), so every protection of an interactive call applies, unchanged and in one place: the
 * route right and model rights, rate limits and budgets, the translation or native forward, retries and fallbacks,
 * the request's record and its observers (usage with cost, metrics, traces, call events, the access line). The
 * typed result is that record's: the error code, the usage settled, Retry-After and the binding rate limit as
 * numbers, found by the request id the call is given (nothing is read back out of the HTTP answer but its status
 * and body).
 */
export function makeCallAs(app: FastifyInstance, auth: Authenticator): CallAs {
  const pending = new Map<string, (record: RequestRecord) => void>();
  app.requestObservers.push((record) => {
    if (pending.size > 0) pending.get(record.id)?.(record);
  });
  return async function callAs(as, request): Promise<CallResult> {
    let ticket: string;
    try {
      ticket = await auth.delegate(as.owner, principalFromSnapshot(as.principal));
    } catch (error) {
      if (!isGatewayError(error)) throw error;
      const body = JSON.stringify(error.toBody());
      return { ...REFUSED, status: error.status, code: error.code, body };
    }
    const id = randomUUID();
    let record: RequestRecord | undefined;
    pending.set(id, (ended) => {
      record = ended;
    });
    try {
      const response = await app.inject({
        method: 'POST',
        url: request.url,
        headers: {
          authorization: `Bearer ${ticket}`,
          'content-type': 'application/json',
          'x-request-id': id,
          ...(request.url === '/v1/messages' ? { 'anthropic-version': ANTHROPIC_VERSION } : {}),
        },
        payload: request.body,
      });
      return {
        status: response.statusCode,
        code: record?.code,
        body: response.body,
        requestId: id,
        usage: record?.usage,
        cacheHit: record?.cacheHit ?? false,
        retryAfterMs: record?.retryAfterMs,
        rate: record?.rate,
      };
    } finally {
      pending.delete(id);
      auth.release(ticket);
    }
  };
}

const REFUSED = {
  requestId: null,
  usage: undefined,
  cacheHit: false,
  retryAfterMs: undefined,
  rate: undefined,
} as const satisfies Partial<CallResult>;
