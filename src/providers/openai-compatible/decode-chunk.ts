import { GatewayError } from '../../errors/gateway-error.js';
import type { SseEvent } from '../../streaming/sse-parser.js';
import type { ChatCompletionChunk, StreamChunk } from '../provider-contract.js';
import { CHAT_COUNTS, correctCounts } from '../usage-figures.js';
import { malformedFrame as malformed } from '../malformed-frame.js';
import { providerErrorDetails } from '../upstream-http-error.js';
import { normaliseAnswer } from './normalise-answer.js';
import { ChunkTemplate } from './chunk-template.js';
import type { KeyScrubber } from '../../secrets/key-scrubber.js';

/**
 * One SSE event of an OpenAI-compatible stream to a chunk, as a pure function. Returns undefined for events
 * that carry no chunk (named events such as `ping` that some servers send); throws a GatewayError for an error
 * event or a frame that is not a chunk. Everything taken from the upstream's text is scrubbed of the keys used
 * for the call, since providers like to echo them.
 */
export function decodeChunkEvent(
  event: SseEvent,
  upstream: string,
  secrets: ReadonlyArray<string | undefined>,
  sentModel?: string,
): StreamChunk | undefined {
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
    throw malformed(
      upstream,
      'the frame is JSON but not a chat.completion.chunk (no choices array)',
      event.data,
      secrets,
    );
  }
  // Made well formed once, here, for every surface (normalise-answer.ts, shared with the non-streamed answer).
  const reshaped = normaliseAnswer(record as { choices: unknown[] }, 'delta', sentModel);
  // A usage figure out of range is corrected in the chunk, which then goes out written again, not as it came.
  const corrected = correctedUsage(record.usage);
  // The upstream's own JSON goes out untouched when it is already a well-formed single-line chunk.
  if (reshaped || corrected || record.object !== 'chat.completion.chunk' || event.data.includes('\n')) {
    record.object = 'chat.completion.chunk';
    return { chunk: record as ChatCompletionChunk };
  }
  return { chunk: record as ChatCompletionChunk, json: event.data };
}

/** Templates learnt in a row that never matched, after which a stream stops learning (its frames all differ). */
const FRUITLESS_TEMPLATES = 4;

/**
 * decodeChunkEvent for one stream, with the template of its last frame (chunk-template.ts): a frame that is the
 * one before with another text is decoded without `JSON.parse`; any other goes through decodeChunkEvent, and
 * becomes the template. A stream whose frames never repeat stops learning after FRUITLESS_TEMPLATES.
 */
export function streamChunkDecoder(
  upstream: string,
  secrets: ReadonlyArray<string | undefined>,
  scrubber?: KeyScrubber,
  /** The model the call asked the upstream for: a chunk that names none names it (normalise-answer.ts). */
  sentModel?: string,
): (event: SseEvent) => StreamChunk | undefined {
  const clean = scrubber && ((text: string) => scrubber.scrub(text) === text);
  let template: ChunkTemplate | undefined;
  let fruitless = 0;
  return (event) => {
    if (template !== undefined && event.event === 'message') {
      const matched = template.match(event.data);
      if (matched !== undefined) {
        fruitless = 0;
        return matched;
      }
    }
    const decoded = decodeChunkEvent(event, upstream, secrets, sentModel);
    if (decoded?.json !== undefined && fruitless < FRUITLESS_TEMPLATES) {
      template = ChunkTemplate.learn(decoded, clean) ?? template;
      fruitless++;
    }
    return decoded;
  };
}

/** A chunk's usage (when it carries one) corrected in place and flagged; whether anything had to be. */
function correctedUsage(usage: unknown): boolean {
  return (
    typeof usage === 'object' &&
    usage !== null &&
    correctCounts(usage as Record<string, unknown>, CHAT_COUNTS) !== undefined
  );
}

function streamError(upstream: string, data: string, secrets: ReadonlyArray<string | undefined>): GatewayError {
  return new GatewayError('upstream_stream_error', { upstream, ...providerErrorDetails(data, secrets) });
}
