import type { CatalogModel, ModelPage } from '../../core/models/model-catalog.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { GeminiListModelsResponse, GeminiModel } from '../../wire/gemini.js';

/** Gemini's page sizes: 50 when absent (or 0), at most 1000 (a larger size is taken as 1000, as Gemini does). */
export const GEMINI_PAGE_SIZE = { fallback: 50, max: 1000 } as const;

/** What a chat model and an embedding model are called with (`supportedGenerationMethods`). */
const CHAT_METHODS = ['generateContent', 'streamGenerateContent', 'countTokens'];
const EMBEDDING_METHODS = ['embedContent', 'batchEmbedContents'];

/** `pageSize` of `GET .../models`: decimal digits only (the gateway's rule for every page size), else a 400 naming it. */
export function geminiPageSize(raw: unknown): number {
  if (raw === undefined) return GEMINI_PAGE_SIZE.fallback;
  if (typeof raw !== 'string' || !/^\d{1,9}$/.test(raw)) {
    throw new GatewayError('invalid_query_parameter', {
      parameter: 'pageSize',
      problem: 'must be a whole number in decimal digits, given once',
    });
  }
  const size = Number(raw);
  return size === 0 ? GEMINI_PAGE_SIZE.fallback : Math.min(size, GEMINI_PAGE_SIZE.max);
}

/**
 * A served model as Gemini's Model: `models/<id>`, its name (config, price catalog; else the id) as `displayName`, its
 * context window as `inputTokenLimit` when declared.
 */
export function geminiModel(model: CatalogModel): GeminiModel {
  const out: GeminiModel = {
    name: `models/${model.id}`,
    displayName: model.display_name ?? model.id,
    supportedGenerationMethods: model.type === 'embedding' ? EMBEDDING_METHODS : CHAT_METHODS,
  };
  if (model.description !== undefined) out.description = model.description;
  if (model.context_window !== null) out.inputTokenLimit = model.context_window;
  return out;
}

/** One page of the catalog (ModelCatalog.page, whose cursor is the page token) as Gemini's list. */
export function geminiModelList(page: ModelPage): GeminiListModelsResponse {
  const list: GeminiListModelsResponse = { models: page.data.map(geminiModel) };
  if (page.next_token !== undefined) list.nextPageToken = page.next_token;
  return list;
}

/**
 * The model `GET .../models/{name}` asks for, among those the caller may see: by id (`models/` in front or not), or
 * by an alias (answered under the model's id); a 404 model_not_found otherwise.
 */
export function findGeminiModel(models: readonly CatalogModel[], name: string): GeminiModel {
  const id = name.startsWith('models/') ? name.slice('models/'.length) : name;
  const model = models.find((m) => m.id === id) ?? models.find((m) => m.aliases?.includes(id) === true);
  if (!model) throw new GatewayError('model_not_found', { model: id.slice(0, 200) });
  return geminiModel(model);
}
