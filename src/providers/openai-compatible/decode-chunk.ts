import { GatewayError } from '../../errors/gateway-error.js';
import { scrubText } from '../../observability/redact.js';
import type { SseEvent } from '../../streaming/sse-parser.js';
import type { ChatCompletionChunk, StreamChunk } from '../contract.js';
import { parseProviderError } from '../upstream-http-error.js';

const FRAME_PREVIEW_CHARS = 120;

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
  // The upstream's own JSON goes out untouched when it is already a well-formed single-line chunk.
  if (record.object !== 'chat.completion.chunk' || event.data.includes('\n')) {
    record.object = 'chat.completion.chunk';
    return { chunk: record as ChatCompletionChunk };
  }
  return { chunk: record as ChatCompletionChunk, json: event.data };
}

function streamError(upstream: string, data: string, secrets: ReadonlyArray<string | undefined>): GatewayError {
  const error = parseProviderError(data);
  const details: Record<string, unknown> = { upstream };
  if (error.code !== undefined) details.upstream_code = scrubText(error.code, secrets);
  if (error.type !== undefined) details.upstream_type = scrubText(error.type, secrets);
  if (error.message !== undefined) details.upstream_message = scrubText(error.message, secrets);
  return new GatewayError('upstream_stream_error', details);
}

function malformed(upstream: string, reason: string, frame: string, secrets: ReadonlyArray<string | undefined>): GatewayError {
  return new GatewayError('upstream_stream_malformed', {
    upstream,
    reason,
    frame_preview: scrubText(frame.slice(0, FRAME_PREVIEW_CHARS), secrets),
  });
}
