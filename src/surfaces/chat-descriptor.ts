import { fixedAnswer, isObjectBody } from '../core/pipeline/answer-cache.js';
import { OPENAI_API, OPENAI_CHAT_PATH } from '../http/openai-shape.js';
import { EVENT, promptAsMessages } from '../webhooks/gateway-events.js';
import { chatSurface } from './chat-surface.js';
import { chatBodySchema } from './chat-schema.js';
import type { SurfaceDescriptor } from './descriptor.js';

/** The body's `stream: true` streams, as SSE (chat, the Responses API and the Messages API alike). */
export function sseIfStreamed({ body }: { body: unknown }): 'sse' | false {
  return (body as { stream?: unknown }).stream === true ? 'sse' : false;
}

/** The model named in the body (a validated one: the schema requires it). */
export function modelInBody({ body }: { body: unknown }): string {
  return (body as { model: string }).model;
}

/** Chat completions, the gateway's own model: OpenAI's `POST /v1/chat/completions` and `?route=chat`. */
export const CHAT_DESCRIPTOR: SurfaceDescriptor = {
  route: 'chat',
  oauthScope: 'chat:write',
  api: OPENAI_API,
  endpoints: [
    { method: 'POST', path: OPENAI_CHAT_PATH, operation: 'generate', bodySchema: chatBodySchema, exclusive: true },
  ],
  v1Route: {
    methods: ['POST'],
    auth: 'Bearer <ADMIN_TOKEN>',
    description: 'Chat completion (JSON, or SSE when stream is true); optional X-Upstream-Key',
  },
  credential: (headers) => headers.authorization,
  modelOf: modelInBody,
  streamOf: sseIfStreamed,
  events: { completed: EVENT.chatCompleted, failed: EVENT.chatFailed, prompt: promptAsMessages },
  cache: {
    cacheable: (body, policy) =>
      isObjectBody(body) && fixedAnswer(policy, body.temperature, [body.tools, body.functions]),
  },
  translation: (deps) => chatSurface(deps.fileSearch),
};
