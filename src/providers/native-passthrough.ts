import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors/gateway-error.js';
import { KeyScrubber } from '../secrets/key-scrubber.js';
import type { SseEvent } from '../streaming/sse-parser.js';
import type {
  CallContext,
  ChatCompletionChunk,
  ChatCompletionResult,
  NativeApi,
  NativeBody,
  StreamBatch,
  StreamChunk,
  Usage,
} from './provider-contract.js';
import { malformedFrame } from './malformed-frame.js';
import { providerErrorDetails } from './upstream-http-error.js';
import { expectEventStream, type UpstreamClient } from './upstream-client.js';
import { readEventStream } from './event-stream-reader.js';
import {
  RESPONSES_COUNTS,
  anomaliesOf,
  anthropicUsage,
  correctAnthropicParts,
  correctInPlace,
  countsOf,
  saneTokens,
  withAnomalies,
  withParts,
} from './usage-figures.js';
import {
  ANTHROPIC_USAGE_FIGURES,
  containerIdOf,
  eventContainerId,
  eventUsage,
  isMessageObject,
  isThreaded,
  messageIdOf,
} from '../wire/anthropic.js';
import { objectOf } from '../wire/json.js';
import {
  RESPONSES_FAILURE_EVENTS,
  RESPONSES_FINAL_EVENTS,
  eventResponse,
  failureError,
  isResponseObject,
  responseIdCandidates,
} from '../wire/openai-responses.js';

/** What the gateway needs to know of an API it forwards untranslated (OpenAI's Responses, Anthropic's Messages). */
export interface NativeWire {
  /** The events that end a stream well. */
  finalEvents: ReadonlySet<string>;
  /** The events that say the upstream failed: they become `upstream_stream_error` (the events before go out). */
  failureEvents: ReadonlySet<string>;
  /** Whether a JSON answer is this API's answer object. */
  isAnswer(value: unknown): boolean;
  /**
   * A JSON answer's usage, its figures corrected in the answer itself where out of range (then the usage carries
   * the anomalies, and the answer is written again).
   */
  answerUsage(value: unknown): Usage | undefined;
  /** The events whose data carries usage. */
  usageEvents: ReadonlySet<string>;
  /**
   * Reads one such event's usage into the running totals (Anthropic splits it over two events), its figures
   * corrected in the event's data where out of range; whether any was (then the event is written again).
   */
  addUsage(event: string, data: unknown, totals: Usage): boolean;
  addUsage(event: string, data: unknown, totals: Usage): void;
  /**
   * The ids the upstream keeps that a JSON answer to `request` names (a response and its items, a container, the
   * message of a thread).
   */
  answerIds(value: unknown, request: NativeBody): string[];
  /** The events whose data names such ids. */
  idEvents: ReadonlySet<string>;
  /** The ids one such event of the answer to `request` names. */
  eventIds(event: string, data: unknown, request: NativeBody): string[];
}

interface Upstream {
  name: string;
  http: UpstreamClient;
  path: string;
  /** Where the API counts a request's tokens (`{input_tokens}` back), when it can. */
  countPath?: string;
  headers(context: CallContext): Record<string, string>;
  secrets(context: CallContext): ReadonlyArray<string | undefined>;
}

/**
 * An API spoken natively: the caller's request and the upstream's answer passed through. Each event's data, and a
 * JSON answer's bytes, are scrubbed of the keys in use (an upstream may repeat one back) and read only for what the
 * gateway needs: the usage, the ids the upstream keeps (whose owner the pipeline records), and whether the stream
 * ended well. A failure event becomes our `upstream_stream_error`; a stream that closes before a final event is
 * `upstream_stream_truncated`.
 */
export function nativePassthrough(upstream: Upstream, wire: NativeWire): NativeApi {
  const send = (body: NativeBody, context: CallContext): Promise<Dispatcher.ResponseData> =>
    upstream.http.send(
      {
        method: 'POST',
        path: upstream.path + (context.forwardQuery ?? ''),
        headers: upstream.headers(context),
        body: context.bodyJson ?? JSON.stringify(body),
      },
      context.signal,
      context.apiKeyOverride,
    );
  const countPath = upstream.countPath;
  return {
    ...(countPath === undefined
      ? {}
      : {
          async countTokens(body: NativeBody, context: CallContext): Promise<number> {
            const request = {
              method: 'POST' as const,
              path: countPath + (context.forwardQuery ?? ''),
              headers: upstream.headers(context),
              body: context.bodyJson ?? JSON.stringify(body),
            };
            const { value } = await upstream.http.readJson(
              await upstream.http.send(request, context.signal, context.apiKeyOverride),
              context.signal,
            );
            const tokens = objectOf(value)?.input_tokens;
            if (typeof tokens !== 'number')
              throw new GatewayError('upstream_invalid_response', {
                upstream: upstream.name,
                reason: 'no input_tokens in the count',
              });
            // Shown to the caller as it is: the count is checked like every figure of usage.
            return saneTokens(tokens);
          },
        }),
    async complete(body, context): Promise<ChatCompletionResult> {
      const { bytes, text, value } = await upstream.http.readJson(await send(body, context), context.signal);
      if (!wire.isAnswer(value))
        throw new GatewayError('upstream_invalid_response', {
          upstream: upstream.name,
          reason: 'not an answer of this API',
        });
      const usage = wire.answerUsage(value);
      const ids = wire.answerIds(value, body);
      // A corrected usage figure means the answer is written again; either way it never carries a key.
      const json = anomaliesOf(usage) ? JSON.stringify(value) : undefined;
      const scrubber = KeyScrubber.of(upstream.secrets(context));
      const answer =
        json === undefined ? (scrubber?.scrubBytes(bytes, text) ?? bytes) : Buffer.from(scrubber?.scrub(json) ?? json);
      return { body: answer, usage, ...(ids.length > 0 ? { serverIds: ids } : {}) };
    },
    stream(body, context): AsyncGenerator<StreamBatch> {
      const secrets = upstream.secrets(context);
      const totals: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
      // One per stream, not per event: every event of the stream is passed on with it.
      const forwarding: ForwardedStream = {
        upstream: upstream.name,
        secrets,
        scrubber: KeyScrubber.of(secrets),
        wire,
        totals,
        request: body,
      };
      return readEventStream({
        upstream: upstream.name,
        signal: context.signal,
        open: async () => {
          const response = await send(body, context);
          expectEventStream(response, upstream.name, secrets);
          return response;
        },
        // The final event is forwarded too (it carries the usage), then the stream ends.
        translate: (event, batch) => {
          batch.push(forwardedEvent(event, forwarding));
          return wire.finalEvents.has(event.event);
        },
        end: (ending) => {
          if (ending === 'marker') return undefined;
          throw new GatewayError('upstream_stream_truncated', {
            upstream: upstream.name,
            reason: 'the stream ended before its final event',
          });
        },
      });
    },
  };
}

/** A forwarded stream, as each of its events is passed on: its upstream, its keys, its API, its usage so far. */
interface ForwardedStream {
  upstream: string;
  secrets: ReadonlyArray<string | undefined>;
  scrubber: KeyScrubber | undefined;
  wire: NativeWire;
  /** The stream's usage, added to by its usage events. */
  totals: Usage;
  request: NativeBody;
}

/**
 * One upstream event, passed on as it came (scrubbed); the final one also carries the usage for the pipeline, and
 * one that names ids the upstream keeps carries them (each event parsed at most once, only when it holds either).
 * Both APIs name every event and send one JSON object as its data, so a frame without a name (the parser's
 * default `message`, a type neither API has) or whose data is not object-shaped is not theirs — a proxy's error
 * text, a `[DONE]`, a cut line — and ends the stream as `upstream_stream_malformed`, as a bad frame does on the
 * translated path, instead of reaching the caller's SDK as an event it cannot read.
 */
function forwardedEvent(
  event: SseEvent,
  { upstream, secrets, scrubber, wire, totals, request }: ForwardedStream,
): StreamChunk {
  if (wire.failureEvents.has(event.event)) {
    throw new GatewayError('upstream_stream_error', {
      upstream,
      ...providerErrorDetails(failureText(event.data), secrets),
    });
  }
  if (event.event === 'message') throw malformedFrame(upstream, 'an event with no event name', event.data, secrets);
  if (!objectShaped(event.data))
    throw malformedFrame(upstream, `the ${event.event} event's data is not a JSON object`, event.data, secrets);
  const data = scrubber?.scrub(event.data) ?? event.data;
  const chunk: ChatCompletionChunk = { object: 'chat.completion.chunk', choices: [] };
  const forwarded: StreamChunk = { chunk, json: data, event: event.event };
  const usage = wire.usageEvents.has(event.event);
  const ids = wire.idEvents.has(event.event);
  if (usage || ids) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      throw new GatewayError('upstream_stream_malformed', {
        upstream,
        reason: `the ${event.event} event is not valid JSON`,
      });
    }
    // A usage figure out of range is corrected in the event's data, which then goes out written again.
    if (usage && wire.addUsage(event.event, parsed, totals)) forwarded.json = JSON.stringify(parsed);
    const named = ids ? wire.eventIds(event.event, parsed, request) : [];
    if (named.length > 0) forwarded.serverIds = named;
  }
  if (wire.finalEvents.has(event.event) && (totals.total_tokens > 0 || anomaliesOf(totals)))
    chunk.usage = { ...totals };
  return forwarded;
}

/** At most this many ids of one answer or event are recorded (a hostile upstream may name any number). */
const MAX_SERVER_IDS = 256;
/** The longest id recorded: a caller's reference to a longer one is refused unread (routes/stored-responses.ts: 256 too). */
const MAX_SERVER_ID_CHARS = 256;

/** The strings among `candidates` that can be ids, at most MAX_SERVER_IDS of them. */
function serverIds(candidates: readonly unknown[]): string[] {
  const ids: string[] = [];
  for (const candidate of candidates) {
    if (typeof candidate === 'string' && candidate !== '' && candidate.length <= MAX_SERVER_ID_CHARS)
      ids.push(candidate);
    if (ids.length === MAX_SERVER_IDS) break;
  }
  return ids;
}

/** A Responses API response's id, its output items' ids and the containers its code-interpreter calls ran in. */
function responseIds(value: unknown): string[] {
  return serverIds(responseIdCandidates(value));
}

/**
 * Whether `data` begins with `{` and ends with `}` (whitespace aside): the check of every passed-through event,
 * not a parse: the shape check costs next to nothing, a JSON.parse costs time and an object to collect on every
 * event. What a wrong frame is in practice (text, HTML, `[DONE]`, an
 * object cut short) fails it; the events the gateway reads (usage, failures) are parsed in full anyway, and the
 * caller's SDK parses the rest, so a frame shaped like an object that is not JSON still fails loudly, never
 * silently.
 */
function objectShaped(data: string): boolean {
  let start = 0;
  let end = data.length - 1;
  while (start < end && isJsonSpace(data.charCodeAt(start))) start++;
  while (end > start && isJsonSpace(data.charCodeAt(end))) end--;
  return data.charCodeAt(start) === 0x7b && data.charCodeAt(end) === 0x7d && end > start;
}

const isJsonSpace = (code: number): boolean => code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;

/** A failure event's error (`response.error`, or `error`) in the `{error: {...}}` shape the error reader knows. */
function failureText(data: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return data;
  }
  // Not an object (`null`, a number): no error fields, as the error reader finds none in it either.
  return JSON.stringify({ error: failureError(objectOf(parsed) ?? {}) });
}

/** OpenAI's Responses API: usage in the final `response.completed` / `response.incomplete` event. */
export const RESPONSES_WIRE: NativeWire = {
  finalEvents: RESPONSES_FINAL_EVENTS,
  failureEvents: RESPONSES_FAILURE_EVENTS,
  isAnswer: isResponseObject,
  answerUsage: (value) => responsesUsage(objectOf(value)?.usage),
  usageEvents: RESPONSES_FINAL_EVENTS,
  addUsage(_event, data, totals) {
    const usage = responsesUsage(eventResponse(data)?.usage);
    if (usage) Object.assign(totals, usage);
    return anomaliesOf(usage) !== undefined;
  },
  // The response's id as soon as it exists (`response.created`), and with its items once it ends.
  answerIds: responseIds,
  idEvents: new Set(['response.created', 'response.completed', 'response.incomplete']),
  eventIds: (_event, data) => responseIds(objectOf(data)?.response),
};

/** A Responses usage object (corrected in place); undefined when it is none or has neither count. */
function responsesUsage(value: unknown): Usage | undefined {
  return countsOf(value, RESPONSES_COUNTS);
}

/** The Messages events that carry usage, and the ids a request may name again (a container, a thread's message). */
const MESSAGES_USAGE_EVENTS: ReadonlySet<string> = new Set(['message_start', 'message_delta']);

/**
 * Anthropic's Messages API: input tokens in `message_start` (cache reads and writes counted as input), output
 * tokens in `message_delta`; the stream ends with `message_stop`.
 */
export const MESSAGES_WIRE: NativeWire = {
  finalEvents: new Set(['message_stop']),
  failureEvents: new Set(['error']),
  isAnswer: isMessageObject,
  answerUsage: (value) => {
    const totals: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    addMessagesUsage(objectOf(value)?.usage, totals);
    return totals.total_tokens > 0 || anomaliesOf(totals) ? totals : undefined;
  },
  usageEvents: MESSAGES_USAGE_EVENTS,
  addUsage: (event, data, totals) => addMessagesUsage(eventUsage(event, objectOf(data) ?? {}), totals),
  // A code-execution container is kept (`container` reuses it); a message only when the request made or continued a
  // thread (a later request continues from it: `thread.previous_message_id`).
  answerIds: (value, request) =>
    serverIds([isThreaded(request) ? messageIdOf(value) : undefined, containerIdOf(value)]),
  idEvents: MESSAGES_USAGE_EVENTS,
  eventIds: (event, data, request) =>
    serverIds([isThreaded(request) ? messageIdOf(data, event) : undefined, eventContainerId(event, data)]),
};

/**
 * Adds a Messages usage object (corrected in place) to the totals; whether a figure had to be corrected. The input
 * (with the cache figures) comes in `message_start` and the output in `message_delta`, whose figures are cumulative.
 */
function addMessagesUsage(value: unknown, totals: Usage): boolean {
  const usage = objectOf(value);
  if (!usage) return false;
  const found = correctInPlace(usage, ANTHROPIC_USAGE_FIGURES) ?? [];
  correctAnthropicParts(usage, found);
  const input =
    saneTokens(usage.input_tokens) +
    saneTokens(usage.cache_creation_input_tokens) +
    saneTokens(usage.cache_read_input_tokens);
  // The input and cache figures of the event that reports the input (message_start; a message_delta may repeat them).
  if (input > 0) {
    const read = anthropicUsage(usage, found);
    totals.prompt_tokens = read.prompt_tokens;
    delete totals.cache_read_tokens;
    delete totals.cache_write_tokens;
    delete totals.cache_write_1h_tokens;
    withParts(totals, {
      cacheRead: read.cache_read_tokens,
      cacheWrite: read.cache_write_tokens,
      cacheWrite1h: read.cache_write_1h_tokens,
    });
  }
  if (usage.output_tokens != null) totals.completion_tokens = saneTokens(usage.output_tokens);
  totals.total_tokens = totals.prompt_tokens + totals.completion_tokens;
  withAnomalies(totals, found);
  return found.length > 0;
}
