import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import { ADMIN, principalSnapshot } from '../auth/principal.js';
import type { RateLimitService } from '../core/limits/rate-limit-service.js';
import { parsePageLimit } from '../core/page-limit.js';
import type { VectorStoreService } from '../core/retrieval/vector-store-service.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { ListQuery, VectorFileStatus } from '../store/vector-contract.js';
import { requestsOnlyGuard } from './requests-only-guard.js';

/** A page of stores, files or a batch's files: OpenAI's 1..100, 20 by default. */
const PAGE = { fallback: 20, max: 100 };
/** What OpenAI's poll helpers wait between two looks at a file or batch in progress (`openai-poll-after-ms`). */
const POLL_AFTER_MS = '500';
const FILE_STATUSES: readonly VectorFileStatus[] = ['in_progress', 'completed', 'failed', 'cancelled'];

type Params = { id?: string; file_id?: string; batch_id?: string };

const param = (request: FastifyRequest, name: keyof Params): string => {
  const value = (request.params as Params)[name];
  return typeof value === 'string' ? value : '';
};

function cursor(query: Record<string, unknown>, name: 'after' | 'before'): { [k in typeof name]?: string } {
  const value = query[name];
  if (value === undefined) return {};
  if (typeof value !== 'string' || value.length === 0 || value.length > 128) {
    throw new GatewayError('invalid_query_parameter', { parameter: name, problem: 'once, an id of the list' });
  }
  return { [name]: value };
}

/** `limit`, `order`, `after`, `before` of a list (OpenAI's: newest first by default). */
function listQueryOf(raw: unknown): ListQuery {
  const query = (raw ?? {}) as Record<string, unknown>;
  const order = query.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') {
    throw new GatewayError('invalid_query_parameter', { parameter: 'order', allowed: ['asc', 'desc'] });
  }
  return { limit: parsePageLimit(query.limit, PAGE), order, ...cursor(query, 'after'), ...cursor(query, 'before') };
}

function statusFilterOf(raw: unknown): { status?: VectorFileStatus } {
  const filter = ((raw ?? {}) as Record<string, unknown>).filter;
  if (filter === undefined) return {};
  if (typeof filter !== 'string' || !(FILE_STATUSES as readonly string[]).includes(filter)) {
    throw new GatewayError('invalid_query_parameter', { parameter: 'filter', allowed: FILE_STATUSES });
  }
  return { status: filter as VectorFileStatus };
}

/** While a file or batch is in progress its GETs tell OpenAI's poll helpers how soon to look again. */
function pollHint<T extends { status: string }>(reply: FastifyReply, object: T): T {
  if (object.status === 'in_progress') void reply.header('openai-poll-after-ms', POLL_AFTER_MS);
  return object;
}

/**
 * OpenAI's Vector Stores API at OpenAI's paths (docs/retrieval.md), with the `vector_stores` right, the caller's
 * requests-per-window limit, OpenAI's error shape, and the record every observed route gets (route
 * `vector_stores`). `OpenAI-Beta: assistants=v2`, which the openai SDK sends, is accepted and not required.
 */
export function mountVectorStores(
  app: FastifyInstance,
  auth: Authenticator,
  limits: RateLimitService,
  service: VectorStoreService,
): void {
  const onRequest = requestsOnlyGuard(auth, limits, 'vector_stores');
  const as = (request: FastifyRequest) => ({
    owner: request.caller,
    principal: principalSnapshot(request.principal ?? ADMIN),
  });
  const opts = { onRequest };
  const base = '/v1/vector_stores';
  app.post(base, opts, async (request) => service.create(as(request), request.body));
  app.get(base, opts, async (request) => service.list(request.caller, listQueryOf(request.query)));
  app.get(`${base}/:id`, opts, async (request) => service.get(request.caller, param(request, 'id')));
  app.post(`${base}/:id`, opts, async (request) => service.update(request.caller, param(request, 'id'), request.body));
  app.delete(`${base}/:id`, opts, async (request) => service.delete(request.caller, param(request, 'id')));
  app.post(`${base}/:id/search`, opts, async (request) =>
    service.search(as(request), param(request, 'id'), request.body),
  );

  const files = `${base}/:id/files`;
  app.post(files, opts, async (request) => service.addFile(request.caller, param(request, 'id'), request.body));
  app.get(files, opts, async (request) =>
    service.listFiles(request.caller, param(request, 'id'), {
      ...listQueryOf(request.query),
      ...statusFilterOf(request.query),
    }),
  );
  app.get(`${files}/:file_id`, opts, async (request, reply) =>
    pollHint(reply, await service.getFile(request.caller, param(request, 'id'), param(request, 'file_id'))),
  );
  app.post(`${files}/:file_id`, opts, async (request) =>
    service.updateFile(request.caller, param(request, 'id'), param(request, 'file_id'), request.body),
  );
  app.delete(`${files}/:file_id`, opts, async (request) =>
    service.deleteFile(request.caller, param(request, 'id'), param(request, 'file_id')),
  );
  app.get(`${files}/:file_id/content`, opts, async (request) =>
    service.fileContent(request.caller, param(request, 'id'), param(request, 'file_id')),
  );

  const batches = `${base}/:id/file_batches`;
  app.post(batches, opts, async (request) => service.createBatch(request.caller, param(request, 'id'), request.body));
  app.get(`${batches}/:batch_id`, opts, async (request, reply) =>
    pollHint(reply, await service.getBatch(request.caller, param(request, 'id'), param(request, 'batch_id'))),
  );
  app.post(`${batches}/:batch_id/cancel`, opts, async (request) =>
    service.cancelBatch(request.caller, param(request, 'id'), param(request, 'batch_id')),
  );
  app.get(`${batches}/:batch_id/files`, opts, async (request) =>
    service.listFiles(request.caller, param(request, 'id'), {
      ...listQueryOf(request.query),
      ...statusFilterOf(request.query),
      batchId: param(request, 'batch_id'),
    }),
  );
}
