import { hostname } from 'node:os';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ChatMessage } from '../providers/contract.js';
import type { Webhooks } from './webhooks.js';

/** The event kinds the gateway emits (docs/webhooks.md documents each `data`). */
export const EVENT = {
  chatCompleted: 'chat.completed',
  chatFailed: 'chat.failed',
  rateLimitExceeded: 'ratelimit.exceeded',
  upstreamUnhealthy: 'upstream.unhealthy',
  upstreamRecovered: 'upstream.recovered',
} as const;

/** Which instance saw it (circuit state is per instance): host name and process id. */
export const INSTANCE = `${hostname()}:${process.pid}`;

const RATE_LIMIT_FIELDS = ['limit', 'scope', 'scope_id', 'max', 'window_seconds', 'retry_after_seconds'] as const;

/**
 * Chat outcomes as events, emitted once the answer has been sent (onResponse), so the event never delays the
 * answer. Only authenticated calls emit (an anonymous flood cannot fill receivers' queues). Prompt and answer
 * text are built only when a recipient opted in.
 */
export function registerChatEvents(app: FastifyInstance, webhooks: Webhooks): void {
  const any = [EVENT.chatCompleted, EVENT.chatFailed, EVENT.rateLimitExceeded].some((kind) => webhooks.wants(kind));
  if (!any) return;
  app.addHook('onResponse', (request, reply, done) => {
    if (request.routeName === 'chat' && request.caller !== 'anonymous') emitChatEvents(webhooks, request, reply.statusCode);
    done();
  });
}

function emitChatEvents(webhooks: Webhooks, request: FastifyRequest, status: number): void {
  const body = request.body as { model?: unknown; stream?: unknown; messages?: ChatMessage[] } | undefined;
  const common = {
    request_id: request.id,
    caller: request.caller,
    model: request.chatModel ?? (typeof body?.model === 'string' ? body.model : null),
    upstream: request.upstreamName ?? null,
    stream: body?.stream === true,
    status,
    duration_ms: Math.round(performance.now() - request.receivedAt),
  };
  const failed = status >= 400 || request.errorCode !== undefined;
  const kind = failed ? EVENT.chatFailed : EVENT.chatCompleted;
  if (webhooks.wants(kind)) {
    const usage = request.usage;
    const data = failed
      ? { ...common, code: request.errorCode ?? null }
      : {
          ...common,
          usage: usage ? { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.total_tokens } : null,
          cost_usd: usage?.cost_usd ?? null,
        };
    const content = webhooks.wantsContent(kind) ? { messages: body?.messages ?? [], answer: request.answerText ?? null } : undefined;
    void webhooks.emit(kind, data, content);
  }
  if (request.errorCode === 'rate_limited' && webhooks.wants(EVENT.rateLimitExceeded)) {
    const details = request.errorDetails ?? {};
    const limit: Record<string, unknown> = {};
    for (const field of RATE_LIMIT_FIELDS) if (details[field] !== undefined) limit[field] = details[field];
    void webhooks.emit(EVENT.rateLimitExceeded, { request_id: request.id, caller: request.caller, model: common.model, ...limit });
  }
}
