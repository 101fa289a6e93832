import { formatEvent } from '../../http/sse.js';
import type { ChatMessage, NativeBody } from '../../providers/contract.js';
import type { NativeReference } from '../native-ownership.js';
import { passthroughEncoder } from '../surface.js';

/**
 * A natively forwarded Responses stream: a failure after the first event is one final `error` event in OpenAI's
 * shape with our code (there is no `response.failed` of our own to write: the gateway never held the response).
 */
export const NATIVE_ENCODER = passthroughEncoder((error) =>
  formatEvent(JSON.stringify({ type: 'error', code: error.code, message: error.message, param: null, details: error.details }), { event: 'error' }),
);

/**
 * A stored (translated) conversation as Responses input items, so a request continuing it can be forwarded natively:
 * turns as messages, tool calls as `function_call` items, tool results as `function_call_output` items.
 */
export function conversationAsItems(messages: readonly ChatMessage[]): Array<Record<string, unknown>> {
  const items: Array<Record<string, unknown>> = [];
  for (const message of messages) {
    if (message.role === 'tool') {
      items.push({ type: 'function_call_output', call_id: message.tool_call_id, output: typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? '') });
      continue;
    }
    const content = message.content;
    if (typeof content === 'string' && content !== '') items.push({ role: message.role, content });
    else if (Array.isArray(content)) items.push({ role: message.role, content: content.map(asInputPart) });
    for (const call of message.tool_calls ?? []) items.push({ type: 'function_call', call_id: call.id, name: call.function.name, arguments: call.function.arguments });
  }
  return items;
}

function asInputPart(part: Record<string, unknown>): Record<string, unknown> {
  if (part.type === 'text') return { type: 'input_text', text: part.text };
  if (part.type === 'image_url') {
    const image = part.image_url as { url?: unknown; detail?: unknown } | undefined;
    return { type: 'input_image', image_url: image?.url, ...(image?.detail !== undefined ? { detail: image.detail } : {}) };
  }
  return part;
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
  const conversation = body.conversation as { id?: unknown } | string | null | undefined;
  add(typeof conversation === 'object' && conversation !== null ? conversation.id : conversation, 'conversation');
  if (Array.isArray(body.input)) {
    (body.input as Array<{ type?: unknown; id?: unknown; encrypted_content?: unknown } | null>).forEach((item, i) => {
      if (item?.type === 'item_reference' || (item?.type === 'reasoning' && typeof item.encrypted_content !== 'string')) add(item.id, `input[${i}].id`);
    });
  }
  if (Array.isArray(body.tools)) {
    (body.tools as Array<{ type?: unknown; container?: unknown } | null>).forEach((tool, i) => {
      if (tool?.type === 'code_interpreter') add(tool.container, `tools[${i}].container`);
    });
  }
  return references;
}
