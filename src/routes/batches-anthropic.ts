import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import { ADMIN, principalSnapshot } from '../auth/principal.js';
import { allLines, anthropicResultLine } from '../core/batches/batch-results.js';
import type { BatchService } from '../core/batches/batch-service.js';
import { parsePageLimit } from '../core/page-limit.js';
import { GatewayError } from '../errors/gateway-error.js';
import { ANTHROPIC_ERRORS, anthropicAuthorization } from '../http/anthropic-shape.js';
import { publicOrigin } from '../http/public-origin.js';
import type { BatchStore } from '../store/batch-contract.js';
import { anthropicBatch } from './batch-views.js';
import { acceptStreamedJson, batchRequestsOf, type BatchBodyLimits } from './batch-requests-body.js';
import { batchesGuard, listCursor, listPage } from './batches-openai.js';

export const ANTHROPIC_BATCHES_PATH = '/v1/messages/batches';

/**
 * Anthropic's Message Batches: `POST /v1/messages/batches`, `GET` (list: `after_id`, `limit`), `GET /{id}`,
 * `POST /{id}/cancel`, `GET /{id}/results` (JSONL), `DELETE /{id}`. The same batches as OpenAI's Batch API (one
 * engine); each API sees only the batches made through it, each caller only its own.
 */
export function mountAnthropicBatches(
  app: FastifyInstance,
  auth: Authenticator,
  batches: BatchService,
  store: BatchStore,
  bodyLimits: BatchBodyLimits,
): void {
  const onRequest = batchesGuard(auth, ANTHROPIC_ERRORS, anthropicAuthorization);
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;
  // The origin of `results_url` (http/public-origin.ts): taken before anything changes, so a bad Host changes nothing.
  const base = publicOrigin;
  const stampId = (request: FastifyRequest, reply: { header(name: string, value: string): unknown }) =>
    reply.header('request-id', request.id);
  // The create reads its body itself, as a stream (up to batches.max_create_bytes, not server.body_limit_bytes):
  // its own scope, whose body parsers hand the body on unread (batch-requests-body.ts).
  void app.register(async function streamedBatchCreate(scope) {
    acceptStreamedJson(scope);
    scope.post(ANTHROPIC_BATCHES_PATH, { onRequest }, async (request, reply) => {
      stampId(request, reply);
      const origin = base(request);
      const created = await batches.createFromRequests(
        request.caller,
        principalSnapshot(request.principal ?? ADMIN),
        batchRequestsOf(request.raw, bodyLimits),
      );
      return reply.send(anthropicBatch(created, origin));
    });
  });
  app.get(ANTHROPIC_BATCHES_PATH, { onRequest }, async (request, reply) => {
    stampId(request, reply);
    const query = request.query as Record<string, unknown>;
    const limit = parsePageLimit(query.limit, { fallback: 20, max: 1000 });
    if (query.before_id !== undefined)
      throw new GatewayError('invalid_query_parameter', {
        parameter: 'before_id',
        problem: 'not supported: page forward with after_id',
      });
    const after = listCursor(query, 'after_id', 'anthropic');
    const page = await batches.list(request.caller, 'anthropic', after, limit + 1);
    const { object: _object, ...list } = listPage(page, limit, (b) => anthropicBatch(b, base(request)));
    return reply.send(list);
  });
  app.get(`${ANTHROPIC_BATCHES_PATH}/:id`, { onRequest }, async (request, reply) => {
    stampId(request, reply);
    return reply.send(anthropicBatch(await batches.get(request.caller, 'anthropic', idOf(request)), base(request)));
  });
  app.post(`${ANTHROPIC_BATCHES_PATH}/:id/cancel`, { onRequest }, async (request, reply) => {
    stampId(request, reply);
    const origin = base(request);
    const cancelled = await batches.cancel(request.caller, 'anthropic', idOf(request));
    return reply.send(anthropicBatch(cancelled, origin));
  });
  app.delete(`${ANTHROPIC_BATCHES_PATH}/:id`, { onRequest }, async (request, reply) => {
    stampId(request, reply);
    await batches.delete(request.caller, 'anthropic', idOf(request));
    return reply.send({ id: idOf(request), type: 'message_batch_deleted' });
  });
  app.get(`${ANTHROPIC_BATCHES_PATH}/:id/results`, { onRequest }, async (request, reply) => {
    stampId(request, reply);
    const batch = await batches.get(request.caller, 'anthropic', idOf(request));
    if (anthropicBatch(batch, '').processing_status !== 'ended')
      throw new GatewayError('batch_not_ended', { batch_id: batch.id, status: batch.status });
    if (batch.resultsUntilMs !== null && Date.now() >= batch.resultsUntilMs)
      throw new GatewayError('batch_results_expired', {
        batch_id: batch.id,
        results_expired_at: new Date(batch.resultsUntilMs).toISOString(),
      });
    async function* results() {
      for await (const line of allLines(store, batch.id)) yield `${anthropicResultLine(line)}\n`;
    }
    return reply.type('application/x-jsonl').send(Readable.from(results()));
  });
}
