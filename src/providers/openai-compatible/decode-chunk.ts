import { GatewayError } from '../../errors/gateway-error.js';
import { scrubText } from '../../secrets/redact.js';
import type { SseEvent } from '../../streaming/sse-parser.js';
import type { ChatCompletionChunk, StreamChunk } from '../contract.js';
import { CHAT_COUNTS, correctCounts } from '../usage-figures.js';
import { providerErrorDetails } from '../upstream-http-error.js';

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
  // A usage figure out of range is corrected in the chunk, which then goes out written again, not as it came.
  const corrected = correctedUsage(record.usage);
  // The upstream's own JSON goes out untouched when it is already a well-formed single-line chunk.
  if (corrected || record.object !== 'chat.completion.chunk' || event.data.includes('\n')) {
    record.object = 'chat.completion.chunk';
    return { chunk: record as ChatCompletionChunk };
  }
  return { chunk: record as ChatCompletionChunk, json: event.data };
}

/** A chunk's usage (when it carries one) corrected in place and flagged; whether anything had to be. */
function correctedUsage(usage: unknown): boolean {
  return typeof usage === 'object' && usage !== null && correctCounts(usage as Record<string, unknown>, CHAT_COUNTS) !== undefined;
}

function streamError(upstream: string, data: string, secrets: ReadonlyArray<string | undefined>): GatewayError {
  return new GatewayError('upstream_stream_error', { upstream, ...providerErrorDetails(data, secrets) });
}

function malformed(upstream: string, reason: string, frame: string, secrets: ReadonlyArray<string | undefined>): GatewayError {
  return new GatewayError('upstream_stream_malformed', {
    upstream,
    reason,
    frame_preview: framePreview(frame, secrets),
  });
}

/**
 * The start of a bad frame, for the operator. Scrubbed before it is cut (a key straddling the cut would leave a
 * piece), over a window a little longer than the preview so a frame of megabytes is not scanned whole.
 */
function framePreview(frame: string, secrets: ReadonlyArray<string | undefined>): string {
  const longest = secrets.reduce((max, secret) => Math.max(max, secret?.length ?? 0), 0);
  return scrubText(frame.slice(0, FRAME_PREVIEW_CHARS + longest), secrets).slice(0, FRAME_PREVIEW_CHARS);
}
