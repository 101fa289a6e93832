import type { FastifyReply, FastifyRequest } from 'fastify';
import { parsePageLimit } from '../core/page-limit.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { ResponseHistory } from '../surfaces/responses/response-history.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

export interface StoredResponseHandlers {
  retrieve: Handler;
  delete: Handler;
  inputItems: Handler;
}

const MAX_ITEMS_PAGE = 100;
const DEFAULT_ITEMS_PAGE = 20;

/**
 * Reading stored responses: `GET /v1/responses/{id}`, `DELETE /v1/responses/{id}`, `GET .../input_items` (and the
 * same as `?route=responses&id=...[&view=input_items]`). A caller reaches only its own responses; any other id
 * is a 404 like an unknown one. Without a store (responses.store: false) every id is unknown.
 */
export function makeStoredResponseHandlers(history: ResponseHistory | undefined): StoredResponseHandlers {
  const historyOrNone = (id: string): ResponseHistory => {
    if (!history) throw new GatewayError('response_not_found', { id: id.slice(0, 256) });
    return history;
  };
  return {
    async retrieve(request, reply) {
      const id = responseIdOf(request);
      const response = await historyOrNone(id).response(request.caller, id);
      return reply.type(request.responseType).send(response);
    },
    async delete(request, reply) {
      const id = responseIdOf(request);
      await historyOrNone(id).delete(request.caller, id);
      return reply.type(request.responseType).send({ id, object: 'response', deleted: true });
    },
    async inputItems(request, reply) {
      const id = responseIdOf(request);
      const page = readItemsPage(request.query as Record<string, unknown>);
      const items = await historyOrNone(id).inputItems(request.caller, id);
      const ordered = page.order === 'asc' ? items : [...items].reverse();
      let start = 0;
      if (page.after !== undefined) {
        const at = ordered.findIndex((item) => item.id === page.after);
        if (at === -1)
          throw new GatewayError('invalid_query_parameter', {
            parameter: 'after',
            problem: 'is not the id of an input item of this response',
          });
        start = at + 1;
      }
      const data = ordered.slice(start, start + page.limit);
      return reply.type(request.responseType).send({
        object: 'list',
        data,
        first_id: data[0]?.id ?? null,
        last_id: data[data.length - 1]?.id ?? null,
        has_more: start + page.limit < ordered.length,
      });
    },
  };
}

/** The id: the path's `{id}` on the drop-in paths, the `id` query parameter on `?route=responses`. */
function responseIdOf(request: FastifyRequest): string {
  const fromPath = (request.params as Record<string, unknown> | undefined)?.id;
  const id = typeof fromPath === 'string' ? fromPath : (request.query as Record<string, unknown>).id;
  if (typeof id !== 'string' || id === '' || id.length > 256) {
    throw new GatewayError('invalid_query_parameter', {
      parameter: 'id',
      problem: 'the id of a stored response is required (at most 256 characters), given once',
    });
  }
  return id;
}

function readItemsPage(query: Record<string, unknown>): {
  limit: number;
  order: 'asc' | 'desc';
  after: string | undefined;
} {
  const { limit: rawLimit, order = 'desc', after } = query;
  const limit = parsePageLimit(rawLimit, { fallback: DEFAULT_ITEMS_PAGE, max: MAX_ITEMS_PAGE });
  if (order !== 'asc' && order !== 'desc')
    throw new GatewayError('invalid_query_parameter', { parameter: 'order', allowed: ['asc', 'desc'] });
  if (after !== undefined && (typeof after !== 'string' || after === ''))
    throw new GatewayError('invalid_query_parameter', {
      parameter: 'after',
      problem: 'must be an item id, given once',
    });
  return { limit, order, after };
}
