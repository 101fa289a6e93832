import { formatEvent } from '../../http/sse.js';
import type { ChatMessage, NativeBody } from '../../providers/provider-contract.js';
import { objectOf } from '../../wire/json.js';
import { inputPartOf, type ResponsesErrorEvent, type ResponsesInputItem } from '../../wire/openai-responses.js';
import type { NativeReference } from '../native-ownership.js';
import { passthroughEncoder } from '../surface.js';

/**
 * A natively forwarded Responses stream: a failure after the first event is one final `error` event in OpenAI's
 * shape with our code (there is no `response.failed` of our own to write: the gateway never held the response).
 */
export const NATIVE_ENCODER = passthroughEncoder((error) => {
  const event: ResponsesErrorEvent = {
    type: 'error',
    code: error.code,
    message: error.message,
    param: null,
    details: error.details,
  };
  return formatEvent(JSON.stringify(event), { event: 'error' });
});

/**
 * A stored (translated) conversation as Responses input items, so a request continuing it can be forwarded natively:
 * turns as messages, tool calls as `function_call` items, tool results as `function_call_output` items.
 */
export function conversationAsItems(messages: readonly ChatMessage[]): ResponsesInputItem[] {
  const items: ResponsesInputItem[] = [];
  for (const message of messages) {
    if (message.role === 'tool') {
      items.push({
        type: 'function_call_output',
        call_id: message.tool_call_id,
        output: typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? ''),
      });
      continue;
    }
    const content = message.content;
    if (typeof content === 'string' && content !== '') items.push({ role: message.role, content });
    else if (Array.isArray(content)) items.push({ role: message.role, content: content.map(inputPartOf) });
    for (const call of message.tool_calls ?? [])
      items.push({
        type: 'function_call',
        call_id: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
      });
  }
  return items;
}

/**
 * The upstream's ids a natively forwarded Responses request refers to, each of which must be the caller's
 * (surfaces/native-ownership.ts): `previous_response_id`; `item_reference` items; `reasoning` items without their
 * `encrypted_content` (the upstream reads those by id); a `code_interpreter` tool's `container` (its files outlive
 * the call); and `conversation` (OpenAI's Conversations API, which the gateway does not serve: never recorded, so
 * always refused).
 */
export function nativeReferences(body: NativeBody): NativeReference[] {
  const references: NativeReference[] = [];
  const add = (id: unknown, field: string) => {
    if (typeof id === 'string') references.push({ id, field });
  };
  add(body.previous_response_id, 'previous_response_id');
  const conversation = body.conversation;
  add(
    typeof conversation === 'object' && conversation !== null ? objectOf(conversation)?.id : conversation,
    'conversation',
  );
  if (Array.isArray(body.input)) {
    body.input.forEach((value: unknown, i) => {
      const item = objectOf(value);
      if (item?.type === 'item_reference' || (item?.type === 'reasoning' && typeof item.encrypted_content !== 'string'))
        add(item.id, `input[${i}].id`);
    });
  }
  if (Array.isArray(body.tools)) {
    body.tools.forEach((value: unknown, i) => {
      const tool = objectOf(value);
      if (tool?.type === 'code_interpreter') add(tool.container, `tools[${i}].container`);
    });
  }
  return references;
}
