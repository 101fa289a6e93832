import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import { principalFromSnapshot } from '../auth/principal.js';
import type { LineAnswer, LineExecutor } from '../core/batches/batch-backend.js';
import { isGatewayError } from '../errors/gateway-error.js';

/** Anthropic's API version a batch's Messages line is sent with (a native Anthropic upstream wants one). */
const ANTHROPIC_VERSION = '2023-06-01';

function header(value: string | string[] | number | undefined): string | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value[0] : String(value);
}

function numberOf(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,12}$/.test(value)) return undefined;
  return Number(value);
}

/**
 * Runs a batch line as a call of the batch's owner, through the gateway's own request pipeline: the line's body is
 * handed to the app's route for its URL in-process (Fastify's `inject`: no socket, no port), with a one-call ticket
 * that authenticates as the owner (`Authenticator.delegate`). So every protection of an interactive call applies to
 * each line, unchanged and in one place: the route right and model rights, rate limits and budgets, the translation
 * or native forward, retries and fallbacks, usage records with cost, metrics, traces, call events. The seam chosen
 * over calling the ChatService directly because those observers are built from the request's record (docs/files.md, "Batches").
 */
export function makeLineExecutor(app: FastifyInstance, auth: Authenticator): LineExecutor {
  return async function executeLine(batch, line): Promise<LineAnswer> {
    let ticket: string;
    try {
      ticket = await auth.delegate(batch.owner, principalFromSnapshot(batch.principal));
    } catch (error) {
      if (!isGatewayError(error)) throw error;
      return { status: error.status, body: JSON.stringify(error.toBody()), requestId: null };
    }
    try {
      const response = await app.inject({
        method: 'POST',
        url: line.url,
        headers: {
          authorization: `Bearer ${ticket}`,
          'content-type': 'application/json',
          ...(line.url === '/v1/messages' ? { 'anthropic-version': ANTHROPIC_VERSION } : {}),
        },
        payload: line.body,
      });
      const { headers } = response;
      const retryAfter = numberOf(header(headers['retry-after']));
      const limit = numberOf(header(headers['ratelimit-limit']));
      const remaining = numberOf(header(headers['ratelimit-remaining']));
      const reset = numberOf(header(headers['ratelimit-reset']));
      return {
        status: response.statusCode,
        body: response.body,
        requestId: header(headers['x-request-id']) ?? null,
        ...(retryAfter !== undefined ? { retryAfterMs: retryAfter * 1000 } : {}),
        ...(limit !== undefined && remaining !== undefined
          ? { rate: { limit, remaining, resetMs: (reset ?? 1) * 1000 } }
          : {}),
      };
    } finally {
      auth.release(ticket);
    }
  };
}
