import { hostname } from 'node:os';
import type { RequestRecord } from '../request/request-record.js';
import type { Webhooks } from './webhooks.js';
import type { Usage } from '../providers/contract.js';

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
} as const;

/** Which instance saw it (circuit state is per instance): host name and process id. */
export const INSTANCE = `${hostname()}:${process.pid}`;

const RATE_LIMIT_FIELDS = ['limit', 'scope', 'scope_id', 'max', 'window_seconds', 'retry_after_seconds'] as const;

/**
 * Chat outcomes as events: a request observer (src/http/request-end.ts), so it runs once the answer has been sent
 * and never delays it. Only authenticated calls emit (an anonymous flood cannot fill receivers' queues), and a
 * call whose caller hung up (499) emits nothing: nobody asked for that answer any more. Prompt and answer text
 * are put in only when a recipient opted in. Undefined when nobody receives a chat event.
 */
export function chatEventsObserver(webhooks: Webhooks): ((record: RequestRecord) => void) | undefined {
  const any = [EVENT.chatCompleted, EVENT.chatFailed, EVENT.responseCompleted, EVENT.responseFailed, EVENT.embeddingsCompleted, EVENT.embeddingsFailed, EVENT.messageCompleted, EVENT.messageFailed, EVENT.rateLimitExceeded].some((kind) => webhooks.wants(kind));
  if (!any) return undefined;
  return (record) => {
    const kinds = record.route === 'chat' ? CHAT_KINDS : record.route === 'responses' ? RESPONSE_KINDS : record.route === 'embeddings' ? EMBEDDING_KINDS : record.route === 'messages' ? MESSAGE_KINDS : undefined;
    if (kinds && record.caller !== 'anonymous' && record.code !== 'client_closed_request') emitChatEvents(webhooks, record, kinds);
  };
}

interface OutcomeKinds {
  completed: string;
  failed: string;
}

/** Each route's names for the same two outcomes (the Responses route's follow OpenAI's own webhook events). */
const CHAT_KINDS: OutcomeKinds = { completed: EVENT.chatCompleted, failed: EVENT.chatFailed };
const RESPONSE_KINDS: OutcomeKinds = { completed: EVENT.responseCompleted, failed: EVENT.responseFailed };
const MESSAGE_KINDS: OutcomeKinds = { completed: EVENT.messageCompleted, failed: EVENT.messageFailed };
const EMBEDDING_KINDS: OutcomeKinds = { completed: EVENT.embeddingsCompleted, failed: EVENT.embeddingsFailed };

function emitChatEvents(webhooks: Webhooks, record: RequestRecord, kinds: OutcomeKinds): void {
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
    const prompt = kinds === CHAT_KINDS || kinds === MESSAGE_KINDS ? { messages: record.prompt ?? [] } : { input: record.prompt ?? null };
    const content = webhooks.wantsContent(kind) ? { ...prompt, answer: record.answerText ?? null } : undefined;
    void webhooks.emit(kind, data, content);
  }
  if (record.code === 'rate_limited' && webhooks.wants(EVENT.rateLimitExceeded)) {
    const details = record.errorDetails ?? {};
    const limit: Record<string, unknown> = {};
    for (const field of RATE_LIMIT_FIELDS) if (details[field] !== undefined) limit[field] = details[field];
    void webhooks.emit(EVENT.rateLimitExceeded, { request_id: record.id, caller: record.caller, model: common.model, ...limit });
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
