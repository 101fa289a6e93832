import type { FastifyReply, FastifyRequest } from 'fastify';
import { parseLimit, type ModelCatalog } from '../core/model-catalog.js';
import { GatewayError } from '../errors/gateway-error.js';

/** GET /v1/?route=models: the served models, `limit` per page, `next_token` to continue (absent on the last page). */
export function makeModelsHandler(catalog: ModelCatalog) {
  return async function handleModels(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const query = request.query as Record<string, unknown>;
    const limit = parseLimit(query.limit);
    const token = query.next_token;
    if (token !== undefined && (typeof token !== 'string' || token === '')) {
      throw new GatewayError('invalid_pagination_token', { parameter: 'next_token' });
    }
    const page = await catalog.page(limit, token);
    return reply.type(request.responseType).send(page);
  };
}
