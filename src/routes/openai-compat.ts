import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MAX_PAGE_SIZE, type CatalogModel, type ModelCatalog, type ModelView } from '../core/model-catalog.js';
import { GatewayError } from '../errors/gateway-error.js';
import { OPENAI_CHAT_PATH, OPENAI_EMBEDDINGS_PATH, OPENAI_MODELS_PATH, OPENAI_RESPONSES_PATH } from '../http/openai-shape.js';
import { embeddingsBodySchema } from './embeddings-schema.js';
import { type Authenticator } from '../auth/authenticator.js';
import { ADMIN } from '../auth/principal.js';
import { modelViewOf } from './models.js';
import { chatBodySchema } from './chat-schema.js';
import { responsesBodySchema } from '../surfaces/responses/responses-schema.js';
import type { StoredResponseHandlers } from './stored-responses.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/**
 * The drop-in paths: `POST /v1/chat/completions` and `GET /v1/models` (+ `/v1/models/{id}`) run the same logic as
 * `?route=chat` and `?route=models`, with the admin token as the SDK's API key. Their errors carry our
 * `{code, message, details}` AND OpenAI's `error` object, which is what the SDKs read.
 */
export function mountOpenAiCompat(app: FastifyInstance, auth: Authenticator, handlers: { chat: Handler; responses: Handler; embeddings: Handler; storedResponses: StoredResponseHandlers }, catalog: ModelCatalog): void {
  const guard = (routeName: 'chat' | 'models' | 'responses' | 'embeddings') =>
    async function openAiGuard(request: FastifyRequest): Promise<void> {
      request.errorShape = 'openai';
      request.routeName = routeName;
      const principal = await auth.authenticate(request.headers.authorization, routeName, request.protocol === 'https');
      request.caller = principal.caller;
      request.principal = principal;
    };
  app.post(OPENAI_CHAT_PATH, { onRequest: guard('chat'), schema: { body: chatBodySchema } }, handlers.chat);
  app.post(OPENAI_RESPONSES_PATH, { onRequest: guard('responses'), schema: { body: responsesBodySchema } }, handlers.responses);
  app.post(OPENAI_EMBEDDINGS_PATH, { onRequest: guard('embeddings'), schema: { body: embeddingsBodySchema } }, handlers.embeddings);
  const responsesGuard = guard('responses');
  app.get(`${OPENAI_RESPONSES_PATH}/:id`, { onRequest: responsesGuard }, handlers.storedResponses.retrieve);
  app.delete(`${OPENAI_RESPONSES_PATH}/:id`, { onRequest: responsesGuard }, handlers.storedResponses.delete);
  app.get(`${OPENAI_RESPONSES_PATH}/:id/input_items`, { onRequest: responsesGuard }, handlers.storedResponses.inputItems);
  for (const url of [OPENAI_CHAT_PATH, OPENAI_RESPONSES_PATH, OPENAI_EMBEDDINGS_PATH]) {
    app.route({
      method: ['GET', 'PUT', 'PATCH', 'DELETE'],
      url,
      onRequest: async (request) => {
        request.errorShape = 'openai';
      },
      handler: async (request) => {
        throw new GatewayError('method_not_allowed', { method: request.method, allowed: ['POST'] }, { headers: { allow: 'POST' } });
      },
    });
  }
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
