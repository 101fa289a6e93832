import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogModel, ModelCatalog } from '../core/models/model-catalog.js';
import { GatewayError } from '../errors/gateway-error.js';
import {
  OPENAI_EMBEDDINGS_PATH,
  OPENAI_ERRORS,
  OPENAI_MODELS_PATH,
  OPENAI_RESPONSES_PATH,
} from '../http/openai-shape.js';
import { embeddingsBodySchema } from './embeddings-schema.js';
import { type Authenticator } from '../auth/authenticator.js';
import { ADMIN } from '../auth/principal.js';
import { visibleModels } from './models-route.js';
import type { SharedModels } from './mount-surface.js';
import type { StoredResponseHandlers } from './stored-responses.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/**
 * OpenAI's drop-in paths that are not a surface's own (surfaces/surface-registry.ts mounts `/v1/chat/completions` and
 * `/v1/responses`): `POST /v1/embeddings`, the stored responses, and `GET /v1/models` (+ `/v1/models/{id}`), which
 * run the same logic as `?route=embeddings` and `?route=models`, with the admin token as the SDK's API key. The
 * models paths answer in a surface's own shape when its API claims the call by the caller's headers (Anthropic's for
 * an Anthropic client: `shared`). Their errors carry our `{code, message, details}` AND OpenAI's `error` object,
 * which is what the SDKs read.
 */
export function mountOpenAiCompat(
  app: FastifyInstance,
  auth: Authenticator,
  handlers: { embeddings: Handler; storedResponses: StoredResponseHandlers },
  catalog: ModelCatalog,
  shared: readonly SharedModels[],
): void {
  const guard = (routeName: 'models' | 'responses' | 'embeddings') =>
    async function openAiGuard(request: FastifyRequest): Promise<void> {
      request.errorShape = OPENAI_ERRORS;
      request.routeName = routeName;
      const principal = await auth.authenticate(request.headers.authorization, routeName, request.protocol === 'https');
      request.caller = principal.caller;
      request.principal = principal;
    };
  const claimedBy = (request: FastifyRequest): SharedModels | undefined => {
    for (const surface of shared) if (surface.claims(request)) return surface;
    return undefined;
  };
  const modelsGuard = guard('models');
  const modelsApiGuard = async function modelsApiGuard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const surface = claimedBy(request);
    return surface ? surface.guard(request, reply) : modelsGuard(request);
  };
  app.post(
    OPENAI_EMBEDDINGS_PATH,
    { onRequest: guard('embeddings'), schema: { body: embeddingsBodySchema } },
    handlers.embeddings,
  );
  const responsesGuard = guard('responses');
  app.get(`${OPENAI_RESPONSES_PATH}/:id`, { onRequest: responsesGuard }, handlers.storedResponses.retrieve);
  app.delete(`${OPENAI_RESPONSES_PATH}/:id`, { onRequest: responsesGuard }, handlers.storedResponses.delete);
  app.get(
    `${OPENAI_RESPONSES_PATH}/:id/input_items`,
    { onRequest: responsesGuard },
    handlers.storedResponses.inputItems,
  );
  app.route({
    method: ['GET', 'PUT', 'PATCH', 'DELETE'],
    url: OPENAI_EMBEDDINGS_PATH,
    onRequest: async (request) => {
      request.errorShape = OPENAI_ERRORS;
    },
    handler: async (request) => {
      throw new GatewayError(
        'method_not_allowed',
        { method: request.method, allowed: ['POST'] },
        { headers: { allow: 'POST' } },
      );
    },
  });
  // Only the models the caller may call; one outside its rights is a 404 like an unknown one (nothing leaks).
  app.get(OPENAI_MODELS_PATH, { onRequest: modelsApiGuard }, async (request, reply) => {
    const surface = claimedBy(request);
    if (surface) return surface.list(request, reply);
    const data = (await visibleModels(catalog, request.principal ?? ADMIN)).map(openAiModel);
    return reply.send({ object: 'list', data });
  });
  app.get(`${OPENAI_MODELS_PATH}/:id`, { onRequest: modelsApiGuard }, async (request, reply) => {
    const surface = claimedBy(request);
    if (surface) return surface.get(request, reply);
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
