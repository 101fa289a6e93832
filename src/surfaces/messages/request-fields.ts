import { GatewayError } from '../../errors/gateway-error.js';
import type { ChatRequestBody } from '../../providers/provider-contract.js';
import type { MessagesRequest } from '../../wire/anthropic.js';
import type { BlockContext } from './message-blocks.js';

/**
 * The top-level fields of a Messages request that the translation reads (the rest of this file and
 * request-to-chat.ts map them). docs/messages.md has the same table, field by field.
 */
export const MAPPED_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'max_tokens',
  'messages',
  'system',
  'tools',
  'tool_choice',
  'stop_sequences',
  'temperature',
  'top_p',
  'top_k',
  'thinking',
  'output_config',
  'metadata',
  'stream',
]);

/** Fields that only tag or hint: left out for a non-Anthropic upstream, and named (X-Gateway-Dropped-Fields). */
export const DROPPED_FIELDS: Readonly<Record<string, string>> = {
  context_management:
    "context editing (clearing old thinking or tool results, compaction) runs on Anthropic's side only; the whole conversation is sent",
  service_tier: "Anthropic's capacity tiers are not the target's",
  speed: "fast mode is Anthropic's only",
  cache_control: "a prompt-cache breakpoint is Anthropic's only (other providers cache repeated prefixes on their own)",
  diagnostics: "prompt-cache diagnostics are Anthropic's only",
  inference_geo: 'where the target runs is its own; the operator chose it',
};

/** Fields that would change the answer and have no equivalent elsewhere: refused (400 capability_not_supported). */
export const REFUSED_FIELDS: Readonly<Record<string, string>> = {
  container: "a code-execution container (and its skills) runs on Anthropic's side only",
  mcp_servers: "MCP servers are called by Anthropic's side only",
};

/**
 * `thread` (Anthropic's message threads, beta `message-threads-2026-08-12`: the conversation kept on Anthropic's
 * side, each later turn sending only its new messages) for a non-Anthropic upstream: refused in Anthropic's own
 * terms, `error.details: {error_code: "thread_unsupported_request", unsupported: ["model"]}` (our
 * `details.error_details`, which the error shape lifts), on which its SDKs (the tool runner, a message thread with
 * `continue_unthreaded`) send the whole conversation without a thread. docs/messages.md, "Message threads", says why
 * the gateway does not keep the thread itself.
 */
export function threadRefusal(): GatewayError {
  return new GatewayError(
    'capability_not_supported',
    {
      field: 'thread',
      problem:
        "message threads are kept on Anthropic's side only; send the whole conversation without `thread` (Anthropic's SDKs do so on this error)",
      error_details: { error_code: 'thread_unsupported_request', unsupported: ['model'] },
    },
    {
      message:
        'This model is served by a non-Anthropic upstream, which keeps no message thread: send the whole conversation without `thread`.',
    },
  );
}

/** The thinking types Anthropic has; another one is left out (named), the target's default applying. */
const THINKING_TYPES: ReadonlySet<string> = new Set(['enabled', 'adaptive', 'disabled']);

/**
 * `thinking` and `output_config.effort` as the chat body's `reasoning_effort`:
 * - an effort is the level of the same name (Anthropic's low, medium, high, xhigh and max are all OpenAI's too; a
 *   value neither knows yet is passed on for the target to judge);
 * - `thinking: {type: "disabled"}` is `none`, OpenAI's level without reasoning;
 * - `thinking: {type: "enabled", budget_tokens}` without an effort: under 4,096 tokens `low`, under 16,384 `medium`, else `high`;
 * - `thinking: {type: "adaptive"}` without an effort is left to the target (the model decides: its own default).
 * No thinking blocks come back from another provider, so `thinking.display` is left out (named).
 */
export function mapReasoning(body: MessagesRequest, chat: ChatRequestBody, context: BlockContext): void {
  const thinking = body.thinking;
  const effort = body.output_config?.effort;
  if (thinking !== undefined && !THINKING_TYPES.has(thinking.type)) {
    context.notes?.drop(
      'thinking.type',
      `thinking of type "${thinking.type.slice(0, 32)}" has no equivalent; the target's own default applies`,
    );
  }
  if (thinking?.display !== undefined && thinking.display !== null)
    context.notes?.drop('thinking.display', 'no thinking blocks come back from a non-Anthropic upstream');
  if (thinking?.type === 'disabled') chat.reasoning_effort = 'none';
  else if (typeof effort === 'string') chat.reasoning_effort = effort;
  else if (thinking?.type === 'enabled') chat.reasoning_effort = effortOfBudget(thinking.budget_tokens);
}

/** Anthropic's thinking budget as a reasoning effort: under 4k tokens low, under 16k medium, else high. */
function effortOfBudget(budget: number | undefined): string {
  if (budget === undefined || budget >= 16_384) return 'high';
  return budget < 4_096 ? 'low' : 'medium';
}

/**
 * `output_config`: `effort` (mapReasoning), `format` (structured output: `{type: "json_schema", schema}` is chat's
 * `response_format`, strict as Anthropic's is). Another key is left out, named.
 */
export function mapOutputConfig(body: MessagesRequest, chat: ChatRequestBody, context: BlockContext): void {
  const config = body.output_config;
  if (config === undefined) return;
  for (const [key, value] of Object.entries(config)) {
    if (key === 'effort' || value === null || value === undefined) continue;
    if (key !== 'format') {
      context.notes?.drop(`output_config.${key.slice(0, 64)}`, 'has no equivalent for a non-Anthropic upstream');
      continue;
    }
    const format = config.format;
    if (format?.type === 'json_schema' && typeof format.schema === 'object' && format.schema !== null) {
      chat.response_format = {
        type: 'json_schema',
        json_schema: { name: 'output', schema: format.schema, strict: true },
      };
    } else
      context.problems.add({
        field: 'output_config.format',
        problem: 'only {type: "json_schema", schema} can be sent to a non-Anthropic upstream',
      });
  }
}

/** `metadata.user_id` is chat's `user` (an opaque end-user id on both); any other key is left out, named. */
export function mapMetadata(body: MessagesRequest, chat: ChatRequestBody, context: BlockContext): void {
  const metadata = body.metadata;
  if (metadata === undefined) return;
  for (const [key, value] of Object.entries(metadata)) {
    if (key === 'user_id' && typeof value === 'string') chat.user = value;
    else if (value !== null && value !== undefined)
      context.notes?.drop(`metadata.${key.slice(0, 64)}`, 'has no equivalent for a non-Anthropic upstream');
  }
}
