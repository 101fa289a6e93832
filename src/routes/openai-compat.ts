import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MAX_PAGE_SIZE, type CatalogModel, type ModelCatalog, type ModelView } from '../core/model-catalog.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { ErrorBody } from '../errors/gateway-error.js';
import { ADMIN, type Authenticator } from '../auth/authenticator.js';
import { modelViewOf } from './models.js';
import { chatBodySchema } from './chat-schema.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/** Paths of OpenAI's own API, so the official SDKs work with only `baseURL` and `apiKey` changed. */
export const OPENAI_CHAT_PATH = '/v1/chat/completions';
export const OPENAI_MODELS_PATH = '/v1/models';
/** What the drop-in paths serve, for the 404 of any other /v1/<path> (an SDK calling /v1/embeddings...). */
export const OPENAI_PATHS = ['POST /v1/chat/completions', 'GET /v1/models', 'GET /v1/models/{id}'];
export const OPENAI_NOT_FOUND_MESSAGE =
  'This OpenAI API path is not served by this gateway; it serves POST /v1/chat/completions, GET /v1/models and GET /v1/models/{id}.';

/**
 * True for a path under /v1/ other than our own `/v1/?route=...`: the paths an OpenAI SDK calls with
 * `baseURL: .../v1`. Every answer there carries OpenAI's `error` object, a 404 or a 401 included.
 */
export function isOpenAiPath(url: string): boolean {
  return url.length > 4 && url.startsWith('/v1/') && url.charCodeAt(4) !== 0x3f; // "?"
}

/** The methods a drop-in path takes (for a 405 with Allow), or undefined when the path is not one of them. */
export function openAiPathMethods(path: string): string[] | undefined {
  const p = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  if (p === OPENAI_CHAT_PATH) return ['POST'];
  if (p === OPENAI_MODELS_PATH || /^\/v1\/models\/[^/]+$/.test(p)) return ['GET', 'HEAD'];
  return undefined;
}

/**
 * The drop-in paths: `POST /v1/chat/completions` and `GET /v1/models` (+ `/v1/models/{id}`) run the same logic as
 * `?route=chat` and `?route=models`, with the admin token as the SDK's API key. Their errors carry our
 * `{code, message, details}` AND OpenAI's `error` object, which is what the SDKs read.
 */
export function mountOpenAiCompat(app: FastifyInstance, auth: Authenticator, chat: Handler, catalog: ModelCatalog): void {
  const guard = (routeName: 'chat' | 'models') =>
    async function openAiGuard(request: FastifyRequest): Promise<void> {
      request.openAiCompat = true;
      request.routeName = routeName;
      const principal = await auth.authenticate(request.headers.authorization, routeName, request.protocol === 'https');
      request.caller = principal.caller;
      request.principal = principal;
    };
  app.post(OPENAI_CHAT_PATH, { onRequest: guard('chat'), schema: { body: chatBodySchema } }, chat);
  app.route({
    method: ['GET', 'PUT', 'PATCH', 'DELETE'],
    url: OPENAI_CHAT_PATH,
    onRequest: async (request) => {
      request.openAiCompat = true;
    },
    handler: async (request) => {
      throw new GatewayError('method_not_allowed', { method: request.method, allowed: ['POST'] }, { headers: { allow: 'POST' } });
    },
  });
  // Only the models the caller may call; one outside its rights is a 404 like an unknown one (nothing leaks).
  app.get(OPENAI_MODELS_PATH, { onRequest: guard('models') }, async (request, reply) => {
    const data = (await allModels(catalog, modelViewOf(request.principal ?? ADMIN))).map(openAiModel);
    return reply.send({ object: 'list', data });
  });
  app.get(`${OPENAI_MODELS_PATH}/:id`, { onRequest: guard('models') }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const model = (await allModels(catalog, modelViewOf(request.principal ?? ADMIN))).find((m) => m.id === id);
    if (!model) throw new GatewayError('model_not_found', { model: id.slice(0, 200) });
    return reply.send(openAiModel(model));
  });
}

async function allModels(catalog: ModelCatalog, view: ModelView | undefined): Promise<CatalogModel[]> {
  const models: CatalogModel[] = [];
  let token: string | undefined;
  do {
    const page = await catalog.page(MAX_PAGE_SIZE, token, view);
    models.push(...page.data);
    token = page.next_token;
  } while (token !== undefined);
  return models;
}

/** OpenAI's model object (`created` in Unix seconds), keeping our extra fields. */
function openAiModel(model: CatalogModel): Record<string, unknown> {
  const created = model.created_at ? Math.floor(Date.parse(model.created_at) / 1000) : 0;
  return { ...model, object: 'model', created, owned_by: model.owned_by ?? model.provider };
}

/** OpenAI's error `type` for a status: what the SDKs use to pick their error class. */
function openAiErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** Our error body plus OpenAI's `error` object, for the drop-in paths. */
export function withOpenAiError(body: ErrorBody, status: number): ErrorBody & { error: Record<string, unknown> } {
  const param = (body.details as { errors?: Array<{ field?: unknown }> }).errors?.[0]?.field;
  return { ...body, error: { message: body.message, type: openAiErrorType(status), code: body.code, param: typeof param === 'string' ? param : null } };
}
