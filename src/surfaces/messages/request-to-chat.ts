import { GatewayError } from '../../errors/gateway-error.js';
import { assertValid, boundedValidatorCompiler } from '../../http/bounded-validation.js';
import { ProblemList } from '../../http/validation-details.js';
import type { ChatMessage, ChatRequestBody } from '../../providers/provider-contract.js';
import { chatToolChoiceOf, type MessagesRequest } from '../../wire/anthropic.js';
import { unmappedFields, type TopLevelFields, type TranslationNotes } from '../translation-notes.js';
import { assistantTurn, systemText, userMessages, type BlockContext } from './message-blocks.js';
import { translatedMessagesSchema } from './messages-schema.js';
import {
  DROPPED_FIELDS,
  MAPPED_FIELDS,
  REFUSED_FIELDS,
  mapMetadata,
  mapOutputConfig,
  mapReasoning,
  threadRefusal,
} from './request-fields.js';
import { mapTools } from './request-tools.js';

/** A Messages request as the route took it (src/wire/anthropic.ts). */
export type { MessagesRequest };

const TOP_LEVEL_FIELDS: TopLevelFields = {
  mapped: MAPPED_FIELDS,
  dropped: DROPPED_FIELDS,
  refusal: (field) =>
    (Object.hasOwn(REFUSED_FIELDS, field) ? REFUSED_FIELDS[field] : undefined) ??
    'is not supported when the model is served by a non-Anthropic upstream',
};

/** The translation's own schema, compiled on first use by the gateway's bounded validator (as a route schema is). */
let validateTranslated: ReturnType<ReturnType<typeof boundedValidatorCompiler>> | undefined;

/**
 * A Messages request as the chat request every provider serves (pure but for `notes`). System text becomes the
 * first message, and a `role: "system"` message a system message in its place; a user turn's `tool_result` blocks
 * become `tool` messages; an assistant's `tool_use` blocks its `tool_calls` (message-blocks.ts). Top-level fields are
 * mapped, dropped with a notice (`notes`: the X-Gateway-Dropped-Fields header; refused instead for a model with
 * `translation: strict`) or refused (400 capability_not_supported naming each), as docs/messages.md tabulates.
 * Without `notes` (the context-window count of a forwarded request, count_tokens) dropped fields are only left out.
 * A message thread (`thread`) is refused first, on its own, in the shape Anthropic's SDKs fall back from (threadRefusal).
 */
export function messagesToChat(
  body: MessagesRequest,
  notes?: TranslationNotes,
  mcp?: BlockContext['mcp'],
): ChatRequestBody {
  validateTranslated ??= boundedValidatorCompiler()({
    schema: translatedMessagesSchema,
    method: 'POST',
    url: '/v1/messages',
    httpPart: 'body',
  });
  assertValid(validateTranslated, body);
  if (body.thread !== undefined && body.thread !== null) throw threadRefusal();
  const context: BlockContext = { problems: new ProblemList(), notes, mcp };
  unmappedFields(body, TOP_LEVEL_FIELDS, context);
  const messages: ChatMessage[] = [];
  const system = systemText(body.system, 'system', context);
  if (system !== '') messages.push({ role: 'system', content: system });
  body.messages.forEach((message, i) => {
    const at = `messages[${i}]`;
    if (message.role === 'assistant') messages.push(...assistantTurn(message.content, at, context));
    else if (message.role === 'user') messages.push(...userMessages(message.content, at, context));
    // A system message in the middle of the conversation (Claude Code's mid-conversation-system beta): in its place.
    else if (message.role === 'system')
      messages.push({ role: 'system', content: systemText(message.content, `${at}.content`, context) });
    else
      context.problems.add({
        field: `${at}.role`,
        problem: `role "${message.role.slice(0, 32)}" cannot be sent to a non-Anthropic upstream`,
        allowed: ['user', 'assistant', 'system'],
      });
  });
  const chat: ChatRequestBody = { model: body.model, messages, max_tokens: body.max_tokens };
  if (body.temperature !== undefined) chat.temperature = body.temperature;
  if (body.top_p !== undefined) chat.top_p = body.top_p;
  if (body.top_k !== undefined) chat.top_k = body.top_k; // passed on: servers that know it use it, others refuse it
  if (body.stop_sequences !== undefined && body.stop_sequences.length > 0) chat.stop = body.stop_sequences;
  if (body.stream === true) chat.stream = true;
  mapMetadata(body, chat, context);
  mapReasoning(body, chat, context);
  mapOutputConfig(body, chat, context);
  if (body.tools !== undefined) mapTools(body.tools, chat, context);
  if (body.tool_choice !== undefined) Object.assign(chat, chatToolChoiceOf(body.tool_choice));
  if (!context.problems.empty) throw new GatewayError('capability_not_supported', context.problems.details());
  return chat;
}
