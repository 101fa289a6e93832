import { GatewayError } from '../errors/gateway-error.js';
import { isJsonObject, type JsonObject } from '../wire/json.js';

/**
 * A function call's arguments, judged the same way on every translated path (Responses and Messages, JSON and
 * stream). The chat API carries them as text that should hold one JSON object; the Messages API carries them as
 * that object (`input`), and a Responses caller parses the text itself. Text that is not a JSON object makes the
 * answer unusable: `upstream_invalid_response` (a 502 before the first byte, the stream's one terminal error event
 * after it), never a call marked `completed`. Two exceptions: empty text is a call without arguments (`{}`), and an
 * answer the token limit or a content filter cut short (`incomplete`) keeps what came: its last call is cut, which
 * is the caller's limit and not the upstream's fault.
 *
 * The check runs on an answer that arrived whole and well formed, so it never counts against the upstream's
 * circuit: whether a model writes valid arguments depends on the caller's prompt and tools, and one caller must
 * not be able to shut an upstream for everyone.
 */
/**
 * The most argument text a streamed Messages tool call keeps to check when it closes (the Responses stream keeps
 * its whole output under the same 32 Mi characters, MAX_STREAMED_OUTPUT_CHARS). Past it the stream fails with
 * `upstream_invalid_response`: no client needs arguments of that size, and holding them must stay bounded.
 */
export const MAX_STREAMED_ARGUMENTS_CHARS = 32 * 1024 * 1024;

export function argumentsObject(args: string): JsonObject | undefined {
  if (args.trim() === '') return {};
  try {
    const input: unknown = JSON.parse(args);
    if (isJsonObject(input)) return input;
  } catch {
    // not JSON: undefined below
  }
  return undefined;
}

/** Throws `upstream_invalid_response` when `args` is not a JSON object (see argumentsObject). */
export function checkArguments(args: string, callId: string, upstream?: string): void {
  if (argumentsObject(args) === undefined) throw invalidArguments(callId, upstream);
}

export function invalidArguments(callId: string, upstream?: string): GatewayError {
  return new GatewayError('upstream_invalid_response', {
    ...(upstream === undefined ? {} : { upstream }),
    reason: `the arguments of function call ${callId.slice(0, 64)} are not a JSON object`,
  });
}

/**
 * What a chat tool call says, read the same way whole (a completion's `message.tool_calls`) or in pieces (a stream
 * delta's), on every translated path: each field only when it has its type, so an odd call is translated as far
 * as it is valid and never crashes the translation. A missing or non-string `id` or `name` is absent (the surface
 * makes up an id; the name is empty), a `function` that is not an object has neither name nor arguments.
 * Arguments sent as a JSON value instead of its text are read as that text: an object is then a valid call, and
 * anything else (a number, an array) fails the JSON-object rule above like any other text. Undefined for a call
 * that is not an object (the provider drops those: src/providers/openai-compatible/normalise-answer.ts).
 */
export function toolCallFields(call: unknown): ToolCallFields | undefined {
  if (!isJsonObject(call)) return undefined;
  const fn = isJsonObject(call.function) ? call.function : undefined;
  const args = fn?.arguments;
  return {
    index: typeof call.index === 'number' ? call.index : undefined,
    id: typeof call.id === 'string' ? call.id : undefined,
    name: typeof fn?.name === 'string' ? fn.name : undefined,
    arguments: typeof args === 'string' ? args : args === undefined || args === null ? undefined : JSON.stringify(args),
  };
}

/** The tool calls of a completion's message, as read by toolCallFields (none when `tool_calls` is not an array). */
export function completionToolCalls(toolCalls: unknown): ToolCallFields[] {
  if (!Array.isArray(toolCalls)) return [];
  const calls: ToolCallFields[] = [];
  for (const call of toolCalls) {
    const fields = toolCallFields(call);
    if (fields) calls.push(fields);
  }
  return calls;
}

export interface ToolCallFields {
  index: number | undefined;
  id: string | undefined;
  name: string | undefined;
  arguments: string | undefined;
}

/** Whether a chat finish reason means the answer was cut short (`length`, `content_filter`), not finished. */
export function cutShort(finishReason: string | null | undefined): boolean {
  return finishReason === 'length' || finishReason === 'content_filter';
}
