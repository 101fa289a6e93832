import type { CatalogModel } from '../../core/models/model-catalog.js';
import { parsePageLimit } from '../../core/page-limit.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ModelsSpec } from '../descriptor.js';

/** Anthropic's page sizes: `limit` from 1 to 1000, 20 when absent. */
const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 1000;
/** A cursor longer than any model id the config accepts is a mistake, not an id. */
const MAX_CURSOR_CHARS = 1024;
/**
 * `created_at` of a model whose release nobody states (no config `created_at`, no catalog date, no dated snapshot
 * name, no upstream list date): Anthropic's field is a required RFC 3339 time, and its API reference says it "may be
 * set to an epoch value if the release date is unknown" (ModelInfo.created_at). Any other date would be invented.
 */
const UNKNOWN_CREATED_AT = '1970-01-01T00:00:00Z';

/**
 * Anthropic's models API (`GET /v1/models`, `/v1/models/{id}` called with `x-api-key` or `anthropic-version`): the
 * models the caller may see, less those declared `type: embedding` (no Messages call can use them), as
 * `{type: "model", id, display_name, created_at}` in the catalog's order (by id; Anthropic's own is newest first),
 * paged by `after_id` / `before_id` and `limit`; one model by its id, or by an alias (answered under the model's id,
 * as Anthropic resolves aliases). The `messages` right will do, since that is the right an Anthropic client's key has.
 */
export const ANTHROPIC_MODELS: ModelsSpec = {
  rights: ['models', 'messages'],
  async list(source, query) {
    const limit = parsePageLimit(query.limit, { fallback: DEFAULT_LIMIT, max: MAX_LIMIT });
    const afterId = cursor(query, 'after_id');
    const beforeId = cursor(query, 'before_id');
    if (afterId !== undefined && beforeId !== undefined) {
      throw new GatewayError('invalid_query_parameter', {
        parameter: 'before_id',
        problem: 'give after_id or before_id, not both',
      });
    }
    const models = messagesModels(await source.all());
    // A cursor is a place in the order, not a lookup: an id the caller cannot see (or that is gone) pages the same.
    let start: number;
    let end: number;
    if (beforeId !== undefined) {
      end = countWhile(models, (m) => m.id < beforeId);
      start = Math.max(0, end - limit);
    } else {
      start = afterId === undefined ? 0 : countWhile(models, (m) => m.id <= afterId);
      end = Math.min(models.length, start + limit);
    }
    const data = models.slice(start, end).map(anthropicModel);
    const hasMore = beforeId !== undefined ? start > 0 : end < models.length;
    return { data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null };
  },
  get(all, id) {
    const models = messagesModels(all);
    const model = models.find((m) => m.id === id) ?? models.find((m) => m.aliases?.includes(id) === true);
    return model && anthropicModel(model);
  },
};

function messagesModels(models: readonly CatalogModel[]): CatalogModel[] {
  return models.filter((m) => m.type !== 'embedding');
}

function cursor(query: Readonly<Record<string, unknown>>, parameter: 'after_id' | 'before_id'): string | undefined {
  const value = query[parameter];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '' || value.length > MAX_CURSOR_CHARS) {
    throw new GatewayError('invalid_query_parameter', {
      parameter,
      problem: `must be one model id (1 to ${MAX_CURSOR_CHARS} characters), given once`,
    });
  }
  return value;
}

/** How many leading models pass `test` (the list is sorted by id, so this is a cursor's place). */
function countWhile(models: CatalogModel[], test: (m: CatalogModel) => boolean): number {
  const index = models.findIndex((m) => !test(m));
  return index === -1 ? models.length : index;
}

/**
 * Anthropic's ModelInfo: `display_name` and `created_at` the catalog's (config, price catalog, upstream: CatalogModel),
 * the id and UNKNOWN_CREATED_AT where none is known; `max_input_tokens` (SDK 1.x) when the model has a context window.
 */
function anthropicModel(model: CatalogModel): Record<string, unknown> & { id: string } {
  const created =
    model.created_at === null ? UNKNOWN_CREATED_AT : new Date(model.created_at).toISOString().replace('.000Z', 'Z');
  return {
    type: 'model',
    id: model.id,
    display_name: model.display_name ?? model.id,
    created_at: created,
    ...(model.context_window !== null ? { max_input_tokens: model.context_window } : {}),
  };
}
