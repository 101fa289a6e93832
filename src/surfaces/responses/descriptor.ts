import { fixedAnswer, isObjectBody } from '../../core/pipeline/answer-cache.js';
import { OPENAI_API, OPENAI_RESPONSES_PATH } from '../../http/openai-shape.js';
import type { NativeBody } from '../../providers/provider-contract.js';
import { EVENT, promptAsInput } from '../../webhooks/gateway-events.js';
import { modelInBody, sseIfStreamed } from '../chat-descriptor.js';
import type { SurfaceDescriptor } from '../descriptor.js';
import { responsesBodySchema } from './responses-schema.js';
import { responsesSurface } from './responses-surface.js';

/**
 * OpenAI's Responses API: `POST /v1/responses` and `?route=responses` (stored responses are read and deleted by
 * routes/stored-responses.ts). Forwarded natively to OpenAI and Azure for what only they have.
 */
export const RESPONSES_DESCRIPTOR: SurfaceDescriptor = {
  route: 'responses',
  oauthScope: 'responses:write',
  api: OPENAI_API,
  endpoints: [
    {
      method: 'POST',
      path: OPENAI_RESPONSES_PATH,
      operation: 'generate',
      bodySchema: responsesBodySchema,
      exclusive: true,
    },
  ],
  v1Route: {
    methods: ['POST', 'GET', 'DELETE'],
    auth: 'Bearer <ADMIN_TOKEN>',
    description:
      'OpenAI Responses API, translated for any upstream (POST; JSON, or typed SSE events when stream is true); GET or DELETE a stored one with id=<response id>, its inputs with &view=input_items',
  },
  credential: (headers) => headers.authorization,
  modelOf: modelInBody,
  streamOf: sseIfStreamed,
  events: { completed: EVENT.responseCompleted, failed: EVENT.responseFailed, prompt: promptAsInput },
  // A stored response is never cached: each one is a new object with its own id that later calls continue.
  cache: {
    cacheable: (body, policy) =>
      isObjectBody(body) && body.store === false && fixedAnswer(policy, body.temperature, [body.tools, body.functions]),
  },
  native: {
    api: 'responses',
    estimate: (body) => {
      const request = body as NativeBody;
      return {
        prompt: Math.ceil(JSON.stringify(request.input ?? '').length / 4),
        maxTokens: request.max_output_tokens ?? undefined,
      };
    },
  },
  // Asked before the model is routed: a model that cannot be routed fails there, with its own error, not here.
  translation: (deps) =>
    responsesSurface({
      history: deps.history,
      forwards: (model) => routed(() => deps.forwards(model), false),
      ownership: deps.ownership,
      carries: (model, field) => routed(() => deps.carries(model, field), true),
      nativeFirst: (model) => routed(() => deps.forwardsWholly(model), false),
      fileSearch: deps.fileSearch,
      mcp: deps.mcp,
    }),
};

function routed<T>(ask: () => T, otherwise: T): T {
  try {
    return ask();
  } catch {
    return otherwise;
  }
}
