import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogModel, ModelCatalog } from '../core/model-catalog.js';
import { GatewayError } from '../errors/gateway-error.js';
import { OPENAI_CHAT_PATH, OPENAI_EMBEDDINGS_PATH, OPENAI_MODELS_PATH, OPENAI_RESPONSES_PATH } from '../http/openai-shape.js';
import { embeddingsBodySchema } from './embeddings-schema.js';
import { type Authenticator } from '../auth/authenticator.js';
import { ADMIN } from '../auth/principal.js';
import { visibleModels } from './models.js';
import { listAnthropicModels, retrieveAnthropicModel } from './anthropic-models.js';
import { anthropicAuthorization, isAnthropicModelsCall } from '../http/anthropic-shape.js';
import { chatBodySchema } from './chat-schema.js';
import { responsesBodySchema } from '../surfaces/responses/responses-schema.js';
import type { StoredResponseHandlers } from './stored-responses.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/**
 * The drop-in paths: `POST /v1/chat/completions` and `GET /v1/models` (+ `/v1/models/{id}`) run the same logic as
 * `?route=chat` and `?route=models`, with the admin token as the SDK's API key (the models paths answer in
 * Anthropic's shape to an Anthropic client: anthropic-models.ts). Their errors carry our
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
  // The models paths serve Anthropic's models API to an Anthropic client (x-api-key or anthropic-version): its
  // credential headers, its error shape, and the `messages` right will do, since that is the right such a key has.
  const modelsGuard = guard('models');
  const anthropicOrOpenAiGuard = async function modelsApiGuard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!isAnthropicModelsCall(request.url, request.headers)) return modelsGuard(request);
    request.errorShape = 'anthropic';
    request.routeName = 'models';
    void reply.header('request-id', request.id);
    const principal = await auth.authenticate(anthropicAuthorization(request.headers), ['models', 'messages'], request.protocol === 'https');
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
  app.get(OPENAI_MODELS_PATH, { onRequest: anthropicOrOpenAiGuard }, async (request, reply) => {
    if (request.errorShape === 'anthropic') return listAnthropicModels(catalog, request, reply);
    const data = (await visibleModels(catalog, request.principal ?? ADMIN)).map(openAiModel);
    return reply.send({ object: 'list', data });
  });
  app.get(`${OPENAI_MODELS_PATH}/:id`, { onRequest: anthropicOrOpenAiGuard }, async (request, reply) => {
    if (request.errorShape === 'anthropic') return retrieveAnthropicModel(catalog, request, reply);
    const { id } = request.params as { id: string };
    const model = (await visibleModels(catalog, request.principal ?? ADMIN)).find((m) => m.id === id);
    if (!model) throw new GatewayError('model_not_found', { model: id.slice(0, 200) });
    return reply.send(openAiModel(model));
  });
}

/** OpenAI's model object (`created` in Unix seconds), keeping our extra fields. */
function openAiModel(model: CatalogModel): Record<string, unknown> {
  const created = model.created_at ? Math.floor(Date.parse(model.created_at) / 1000) : 0;
  return { ...model, object: 'model', created, owned_by: model.owned_by ?? model.provider };
}
