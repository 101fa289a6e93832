import { GatewayError } from '../../errors/gateway-error.js';
import type { SseEvent } from '../../streaming/sse-parser.js';
import type { ChatCompletionChunk, StreamChunk } from '../contract.js';
import { malformedFrame as malformed } from '../malformed-frame.js';
import { providerErrorDetails } from '../upstream-http-error.js';

/**
 * One SSE event of an OpenAI-compatible stream to a chunk, as a pure function. Returns undefined for events
 * that carry no chunk (named events such as `ping` that some servers send); throws a GatewayError for an error
 * event or a frame that is not a chunk. Everything taken from the upstream's text is scrubbed of the keys used
 * for the call, since providers like to echo them.
 */
export function decodeChunkEvent(event: SseEvent, upstream: string, secrets: ReadonlyArray<string | undefined>): StreamChunk | undefined {
  if (event.event === 'error') throw streamError(upstream, event.data, secrets);
  if (event.event !== 'message') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(event.data);
  } catch {
    throw malformed(upstream, 'the frame is not valid JSON', event.data, secrets);
  }
  const record = parsed as (Partial<ChatCompletionChunk> & { error?: unknown }) | null;
  if (typeof record === 'object' && record !== null && record.error !== undefined) {
    throw streamError(upstream, event.data, secrets);
  }
  if (typeof record !== 'object' || record === null || !Array.isArray(record.choices)) {
    throw malformed(upstream, 'the frame is JSON but not a chat.completion.chunk (no choices array)', event.data, secrets);
  }
  const reshaped = normaliseChoices(record as { choices: unknown[] });
  // The upstream's own JSON goes out untouched when it is already a well-formed single-line chunk.
  if (reshaped || record.object !== 'chat.completion.chunk' || event.data.includes('\n')) {
    record.object = 'chat.completion.chunk';
    return { chunk: record as ChatCompletionChunk };
  }
  return { chunk: record as ChatCompletionChunk, json: event.data };
}

function streamError(upstream: string, data: string, secrets: ReadonlyArray<string | undefined>): GatewayError {
  return new GatewayError('upstream_stream_error', { upstream, ...providerErrorDetails(data, secrets) });
}

/**
 * Makes what the surfaces read of a chunk well formed, once, here: every surface (chat, Responses, Messages) then
 * sees the same chunk, and none has to guard against shapes the chat API never sends. What is changed carries
 * nothing the upstream meant, so it is translated rather than refused: a missing, null or non-object `delta` (some
 * servers end with a bare `{"index":0,"finish_reason":"stop"}`) is an empty delta; a `tool_calls` entry or a
 * choice that is not an object is dropped (`tool_calls` itself when nothing is left). Returns whether anything
 * changed: the upstream's own JSON then no longer describes the chunk. A few type checks per choice: no cost a
 * stream would notice (docs/benchmarks.md: reading each chunk is what a chunk costs).
 */
function normaliseChoices(record: { choices: unknown[] }): boolean {
  let changed = false;
  let dropped = false;
  for (const choice of record.choices) {
    if (!isObject(choice)) {
      dropped = true;
      continue;
    }
    const delta = choice.delta;
    if (!isObject(delta)) {
      choice.delta = {};
      changed = true;
      continue;
    }
    const calls = delta.tool_calls;
    if (Array.isArray(calls) && !calls.every(isObject)) {
      const kept = calls.filter(isObject);
      if (kept.length > 0) delta.tool_calls = kept;
      else delete delta.tool_calls;
      changed = true;
    }
  }
  if (dropped) record.choices = record.choices.filter(isObject);
  return changed || dropped;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
