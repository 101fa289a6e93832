import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import { ADMIN, principalSnapshot } from '../auth/principal.js';
import { BATCH_ENDPOINTS, COMPLETION_WINDOW, isBatchId, type BatchService } from '../core/batches/batch-service.js';
import { parsePageLimit } from '../core/page-limit.js';
import { GatewayError } from '../errors/gateway-error.js';
import { OPENAI_ERRORS } from '../http/openai-shape.js';
import type { BatchApi, BatchRecord } from '../store/batch-contract.js';
import { openAiBatch } from './batch-views.js';

export const OPENAI_BATCHES_PATH = '/v1/batches';

const createBodySchema = {
  type: 'object',
  required: ['input_file_id', 'endpoint', 'completion_window'],
  properties: {
    input_file_id: { type: 'string', minLength: 1, maxLength: 256 },
    endpoint: { type: 'string', maxLength: 256 },
    completion_window: { type: 'string', maxLength: 64 },
    // OpenAI's metadata: at most 16 pairs, keys up to 64 characters, values up to 512.
    metadata: {
      type: ['object', 'null'],
      maxProperties: 16,
      propertyNames: { maxLength: 64 },
      additionalProperties: { type: 'string', maxLength: 512 },
    },
  },
} as const;

interface CreateBody {
  input_file_id: string;
  endpoint: string;
  completion_window: string;
  metadata?: Record<string, string> | null;
  /** `{anchor: "created_at", seconds}`: checked by the service (output-expiry.ts), each field named when wrong. */
  output_expires_after?: unknown;
}

/** The statuses OpenAI refuses to cancel (409 "Cannot cancel a batch with status 'completed'."). */
const ENDED_UNCANCELLABLE = new Set(['completed', 'failed', 'expired']);

/** The guard of the batch paths: OpenAI's error shape, the `batches` right, the caller. */
export function batchesGuard(
  auth: Authenticator,
  errors: FastifyRequest['errorShape'],
  credential: (headers: IncomingHttpHeaders) => string | undefined = (headers) => headers.authorization,
) {
  return async function guardBatches(request: FastifyRequest): Promise<void> {
    request.errorShape = errors;
    request.routeName = 'batches';
    const principal = await auth.authenticate(credential(request.headers), 'batches', request.protocol === 'https');
    request.caller = principal.caller;
    request.principal = principal;
  };
}

/**
 * OpenAI's Batch API: `POST /v1/batches`, `GET /v1/batches` (cursor `after`, `limit`), `GET /v1/batches/{id}`,
 * `POST /v1/batches/{id}/cancel`. Each batch is its creator's: another caller's id is a 404 like an unknown one.
 */
export function mountOpenAiBatches(app: FastifyInstance, auth: Authenticator, batches: BatchService): void {
  const onRequest = batchesGuard(auth, OPENAI_ERRORS);
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;
  app.post(OPENAI_BATCHES_PATH, { onRequest, schema: { body: createBodySchema } }, async (request, reply) => {
    const body = request.body as CreateBody;
    if (!BATCH_ENDPOINTS.includes(body.endpoint))
      throw new GatewayError('batch_input_invalid', {
        field: 'endpoint',
        problem: `must be one of ${BATCH_ENDPOINTS.join(', ')}`,
      });
    if (body.completion_window !== COMPLETION_WINDOW)
      throw new GatewayError('batch_input_invalid', { field: 'completion_window', problem: 'must be "24h"' });
    const created = await batches.createFromFile(request.caller, principalSnapshot(request.principal ?? ADMIN), {
      inputFileId: body.input_file_id,
      endpoint: body.endpoint,
      metadata: body.metadata ?? null,
      outputExpiresAfter: body.output_expires_after,
    });
    return reply.send(openAiBatch(created));
  });
  app.get(OPENAI_BATCHES_PATH, { onRequest }, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const limit = parsePageLimit(query.limit, { fallback: 20, max: 100 });
    const after = listCursor(query, 'after', 'openai');
    const page = await batches.list(request.caller, 'openai', after, limit + 1);
    return reply.send(listPage(page, limit, openAiBatch));
  });
  app.get(`${OPENAI_BATCHES_PATH}/:id`, { onRequest }, async (request, reply) =>
    reply.send(openAiBatch(await batches.get(request.caller, 'openai', idOf(request)))),
  );
  // An ended batch is a 409, as at OpenAI; a cancelled (or cancelling) one is answered as it is, so a retried
  // cancel whose first answer was lost still succeeds (docs/files.md, "Batches").
  app.post(`${OPENAI_BATCHES_PATH}/:id/cancel`, { onRequest }, async (request, reply) => {
    const batch = await batches.cancel(request.caller, 'openai', idOf(request));
    if (ENDED_UNCANCELLABLE.has(batch.status)) {
      // The openai SDKs retry a 409 unless told not to: asking again cannot change an ended batch.
      void reply.header('x-should-retry', 'false');
      throw new GatewayError('batch_not_cancellable', { batch_id: batch.id, status: batch.status });
    }
    return reply.send(openAiBatch(batch));
  });
}

/** A cursor page (`{object: "list", data, first_id, last_id, has_more}`) from `limit + 1` records. */
export function listPage(
  records: readonly BatchRecord[],
  limit: number,
  view: (batch: BatchRecord) => Record<string, unknown>,
): Record<string, unknown> {
  const data = records.slice(0, limit).map(view);
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
    has_more: records.length > limit,
  };
}

/**
 * A list's cursor (`after`, Anthropic's `after_id`): absent, or an id of that API's batches. Anything else is a 400
 * naming it, not a page: a cursor that cannot be a batch id is a caller's mistake (a file id, a typo), and answering
 * it with some page would hide that. A well-formed id that is not (or no longer) the caller's is left to the store.
 */
export function listCursor(query: Record<string, unknown>, name: string, api: BatchApi): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !isBatchId(api, value)) {
    throw new GatewayError('invalid_query_parameter', {
      parameter: name,
      problem: `must be the id of one of your batches (${api === 'openai' ? 'batch_' : 'msgbatch_'}<32 hex digits>), given once`,
    });
  }
  return value;
}
