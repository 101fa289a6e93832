import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  MAX_PAGE_SIZE,
  parseLimit,
  type CatalogModel,
  type ModelCatalog,
  type ModelView,
} from '../core/models/model-catalog.js';
import { GatewayError } from '../errors/gateway-error.js';
import { ADMIN, type Principal } from '../auth/principal.js';
import type { ModelSource, ModelsSpec } from '../surfaces/descriptor.js';

/** GET /v1/?route=models: the served models, `limit` per page, `next_token` to continue (absent on the last page). */
export function makeModelsHandler(catalog: ModelCatalog) {
  return async function handleModels(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const query = request.query as Record<string, unknown>;
    const limit = parseLimit(query.limit);
    const token = query.next_token;
    if (token !== undefined && (typeof token !== 'string' || token === '')) {
      throw new GatewayError('invalid_pagination_token', { parameter: 'next_token' });
    }
    const page = await catalog.page(limit, token, modelViewOf(request.principal ?? ADMIN));
    return reply.type(request.responseType).send(page);
  };
}

/**
 * What a caller may see of the models: only those it may call. A key limited to some models sees those (with the
 * aliases it may call them by: all of them when it may call the model, since an alias of an allowed model is
 * allowed); a key allowed only an alias of a model sees that alias as a model of its own, never the model's id it
 * could not call. Undefined (every model) for a principal without a model list.
 */
export function modelViewOf(principal: Principal): ModelView | undefined {
  const allowed = principal.models;
  if (allowed === undefined) return undefined;
  return function visibleTo(model: CatalogModel): CatalogModel[] {
    if (allowed.has(model.id)) return [model];
    return (model.aliases ?? [])
      .filter((alias) => allowed.has(alias))
      .map((alias) => {
        const { aliases: _all, ...rest } = model;
        return { ...rest, id: alias };
      });
  };
}

/**
 * Every model a caller may see (the one filter, `modelViewOf`), in the catalog's order (by id): what the drop-in
 * models paths, OpenAI's and Anthropic's, list and look an id up in.
 */
export async function visibleModels(catalog: ModelCatalog, principal: Principal): Promise<CatalogModel[]> {
  const view = modelViewOf(principal);
  const models: CatalogModel[] = [];
  let token: string | undefined;
  do {
    const page = await catalog.page(MAX_PAGE_SIZE, token, view);
    models.push(...page.data);
    token = page.next_token;
  } while (token !== undefined);
  return models;
}

/**
 * A surface's models API in its own shape (Anthropic's on `/v1/models` for an Anthropic client): the models the
 * caller may see (`visibleModels`), listed or looked up by the surface's descriptor; one outside the caller's rights
 * is a 404 like an unknown one (nothing leaks).
 */
export function makeSurfaceModelsHandlers(catalog: ModelCatalog, spec: ModelsSpec) {
  return {
    list: async function listSurfaceModels(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
      const principal = request.principal ?? ADMIN;
      const source: ModelSource = {
        all: () => visibleModels(catalog, principal),
        page: (limit, token) => catalog.page(limit, token, modelViewOf(principal)),
      };
      const listed = spec.list(source, request.query as Record<string, unknown>);
      return reply.send(listed instanceof Promise ? await listed : listed);
    },
    get: async function getSurfaceModel(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
      const id = modelIdOf(request.params);
      const model = spec.get(await visibleModels(catalog, request.principal ?? ADMIN), id);
      if (model === undefined) throw new GatewayError('model_not_found', { model: id.slice(0, 200) });
      return reply.send(model);
    },
  };
}

/** The model id of a models path: its one parameter (`/v1/models/:id`, a surface's own `:model`). */
function modelIdOf(params: unknown): string {
  const values = Object.values(params as Record<string, string>);
  return values[values.length - 1] ?? '';
}
