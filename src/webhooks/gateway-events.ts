import { hostname } from 'node:os';
import type { RequestRecord } from '../request/request-record.js';
import type { Webhooks } from './webhooks.js';
import type { Usage } from '../providers/provider-contract.js';

/** The event kinds the gateway emits (docs/webhooks.md documents each `data`). */
export const EVENT = {
  chatCompleted: 'chat.completed',
  chatFailed: 'chat.failed',
  responseCompleted: 'response.completed',
  responseFailed: 'response.failed',
  messageCompleted: 'message.completed',
  messageFailed: 'message.failed',
  embeddingsCompleted: 'embeddings.completed',
  embeddingsFailed: 'embeddings.failed',
  rateLimitExceeded: 'ratelimit.exceeded',
  upstreamUnhealthy: 'upstream.unhealthy',
  upstreamRecovered: 'upstream.recovered',
  keyCreated: 'key.created',
  keyUpdated: 'key.updated',
  keyRotated: 'key.rotated',
  keyRevoked: 'key.revoked',
  configReloaded: 'config.reloaded',
} as const;

/** Which instance saw it (circuit state is per instance): host name and process id. */
export const INSTANCE = `${hostname()}:${process.pid}`;

const RATE_LIMIT_FIELDS = ['limit', 'scope', 'scope_id', 'max', 'window_seconds', 'retry_after_seconds'] as const;

/** A route's names for its two outcomes, and what an event that opted in to content shows as the prompt. */
export interface RouteEvents {
  readonly completed: string;
  readonly failed: string;
  /** The prompt part of the event's content, in the words of the route's API (`{messages}`, `{input}`...). */
  prompt(body: unknown): Record<string, unknown>;
}

/** What the caller sent the model as chat's records showed it: `messages`, or else `input` (the body's own value). */
function promptOf(body: unknown): unknown {
  const fields = body as { messages?: unknown; input?: unknown } | null | undefined;
  return Array.isArray(fields?.messages) ? fields.messages : fields?.input;
}

/** The content's prompt as `{messages}` (chat, Messages: the conversation, or [] when there is none). */
export function promptAsMessages(body: unknown): Record<string, unknown> {
  return { messages: promptOf(body) ?? [] };
}

/** The content's prompt as `{input}` (the Responses API, embeddings: the input, or null). */
export function promptAsInput(body: unknown): Record<string, unknown> {
  return { input: promptOf(body) ?? null };
}

/** The embeddings route's events (the gateway's own route; a surface's come from its descriptor). */
export const EMBEDDINGS_EVENTS: RouteEvents = {
  completed: EVENT.embeddingsCompleted,
  failed: EVENT.embeddingsFailed,
  prompt: promptAsInput,
};

/**
 * Call outcomes as events: a request observer (src/http/request-end.ts), so it runs once the answer has been sent
 * and never delays it. Each route's names come from `routes` (built by the wiring from the surface registry). Only
 * authenticated calls emit (an anonymous flood cannot fill receivers' queues), and a call whose caller hung up (499)
 * emits nothing: nobody asked for that answer any more. Prompt and answer text are put in only when a recipient
 * opted in. Undefined when nobody receives a call event.
 */
export function chatEventsObserver(
  webhooks: Webhooks,
  routes: ReadonlyMap<string, RouteEvents>,
): ((record: RequestRecord) => void) | undefined {
  const kinds = [...routes.values()].flatMap((events) => [events.completed, events.failed]);
  if (![...kinds, EVENT.rateLimitExceeded].some((kind) => webhooks.wants(kind))) return undefined;
  return (record) => {
    const events = record.route === undefined ? undefined : routes.get(record.route);
    if (events && record.caller !== 'anonymous' && record.code !== 'client_closed_request')
      emitChatEvents(webhooks, record, events);
  };
}

function emitChatEvents(webhooks: Webhooks, record: RequestRecord, kinds: RouteEvents): void {
  const common = {
    request_id: record.id,
    caller: record.caller,
    model: record.model ?? null,
    upstream: record.upstream ?? null,
    stream: record.stream,
    status: record.status,
    duration_ms: Math.round(record.latencyMs),
  };
  const failed = record.status >= 400 || record.code !== undefined;
  const kind = failed ? kinds.failed : kinds.completed;
  if (webhooks.wants(kind)) {
    const usage = record.usage;
    const data = failed
      ? { ...common, code: record.code ?? null }
      : {
          ...common,
          usage: usage ? usagePayload(usage) : null,
          cost_usd: usage?.cost_usd ?? null,
          cache_savings_usd: usage?.cache_savings_usd ?? null,
        };
    const content = webhooks.wantsContent(kind)
      ? { ...kinds.prompt(record.body), answer: record.answerText ?? null }
      : undefined;
    void webhooks.emit(kind, data, content);
  }
  if (record.code === 'rate_limited' && webhooks.wants(EVENT.rateLimitExceeded)) {
    const details = record.errorDetails ?? {};
    const limit: Record<string, unknown> = {};
    for (const field of RATE_LIMIT_FIELDS) if (details[field] !== undefined) limit[field] = details[field];
    void webhooks.emit(EVENT.rateLimitExceeded, {
      request_id: record.id,
      caller: record.caller,
      model: common.model,
      ...limit,
    });
  }
}

/** A usage as webhooks carry it: the counts and their parts (docs/usage.md, "Token parts"; 0 when none). */
function usagePayload(usage: Usage): Record<string, number> {
  return {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens,
    cache_read_tokens: usage.cache_read_tokens ?? 0,
    cache_write_tokens: usage.cache_write_tokens ?? 0,
    reasoning_tokens: usage.reasoning_tokens ?? 0,
  };
}
