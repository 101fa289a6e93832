import { fixedAnswer, isObjectBody } from '../../core/pipeline/answer-cache.js';
import { ANTHROPIC_API, ANTHROPIC_MESSAGES_PATH, anthropicAuthorization } from '../../http/anthropic-shape.js';
import type { NativeBody } from '../../providers/provider-contract.js';
import { EVENT, promptAsMessages } from '../../webhooks/gateway-events.js';
import { modelInBody, sseIfStreamed } from '../chat-descriptor.js';
import type { SurfaceDescriptor } from '../descriptor.js';
import { countTokensBodySchema, messagesBodySchema } from './messages-schema.js';
import { messagesSurface } from './messages-surface.js';
import { ANTHROPIC_MODELS } from './models.js';
import { messagesToChat, type MessagesRequest } from './request-to-chat.js';

/**
 * Anthropic's Messages API: `POST /v1/messages` (and `?route=messages`), `POST /v1/messages/count_tokens`, and
 * Anthropic's models API on `/v1/models` for an Anthropic client. Credentials as Anthropic clients send them:
 * `x-api-key: <key>` (the SDKs, Claude Code with ANTHROPIC_API_KEY) or `Authorization: Bearer <key>` (Claude Code
 * with ANTHROPIC_AUTH_TOKEN). Errors carry Anthropic's `{type: "error", error}` beside ours, and every answer a
 * `request-id` header, which the SDKs quote. Forwarded natively to Anthropic.
 */
export const MESSAGES_DESCRIPTOR: SurfaceDescriptor = {
  route: 'messages',
  oauthScope: 'messages:write',
  api: ANTHROPIC_API,
  endpoints: [
    {
      method: 'POST',
      path: ANTHROPIC_MESSAGES_PATH,
      operation: 'generate',
      bodySchema: messagesBodySchema,
      exclusive: true,
    },
    // The `messages` right, but no model call to record.
    {
      method: 'POST',
      path: `${ANTHROPIC_MESSAGES_PATH}/count_tokens`,
      operation: 'count_tokens',
      bodySchema: countTokensBodySchema(),
      routeName: 'count_tokens',
    },
  ],
  v1Route: {
    methods: ['POST'],
    auth: 'Bearer <ADMIN_TOKEN> (or x-api-key)',
    description:
      "Anthropic's Messages API, translated for any upstream (JSON, or Anthropic's SSE events when stream is true)",
  },
  credential: anthropicAuthorization,
  requestIdHeader: 'request-id',
  modelOf: modelInBody,
  streamOf: sseIfStreamed,
  events: { completed: EVENT.messageCompleted, failed: EVENT.messageFailed, prompt: promptAsMessages },
  cache: {
    cacheable: (body, policy) =>
      isObjectBody(body) && fixedAnswer(policy, body.temperature, [body.tools, body.functions]),
  },
  native: {
    api: 'messages',
    estimate: (body) => {
      const request = body as NativeBody;
      const prompt = JSON.stringify(request.messages ?? '') + JSON.stringify(request.system ?? '');
      return { prompt: Math.ceil(prompt.length / 4), maxTokens: request.max_tokens ?? undefined };
    },
  },
  translation: (deps) => messagesSurface(deps.forwards, deps.ownership, deps.mcp),
  // Counted as it would be translated (max_tokens does not count, but the translation wants one).
  tokenCount: {
    toChat: ({ body }) => messagesToChat({ ...(body as MessagesRequest), max_tokens: 1 }),
    answer: (tokens) => ({ input_tokens: tokens }),
  },
  models: ANTHROPIC_MODELS,
};
