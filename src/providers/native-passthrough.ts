import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors/gateway-error.js';
import { scrubText } from '../secrets/redact.js';
import type { SseEvent } from '../streaming/sse-parser.js';
import type { CallContext, ChatCompletionChunk, ChatCompletionResult, NativeApi, NativeBody, StreamBatch, StreamChunk, Usage } from './contract.js';
import { malformedFrame } from './malformed-frame.js';
import { providerErrorDetails } from './upstream-http-error.js';
import { expectEventStream, type UpstreamClient } from './upstream-client.js';
import { readEventStream } from './event-stream-reader.js';
import { RESPONSES_COUNTS, anomaliesOf, correctInPlace, countsOf, saneTokens, withAnomalies } from './usage-figures.js';

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
 * An API spoken natively: the caller's request and the upstream's answer passed through. Each event's data is
 * scrubbed of the keys in use (an upstream may repeat one back) and read only for what the gateway needs: the
 * usage, and whether the stream ended well. A failure event becomes our `upstream_stream_error`; a stream that
 * closes before a final event is `upstream_stream_truncated`.
 */
export function nativePassthrough(upstream: Upstream, wire: NativeWire): NativeApi {
  const send = (body: NativeBody, context: CallContext): Promise<Dispatcher.ResponseData> =>
    upstream.http.send(
      { method: 'POST', path: upstream.path, headers: upstream.headers(context), body: context.bodyJson ?? JSON.stringify(body) },
      context.signal,
      context.apiKeyOverride,
    );
  const countPath = upstream.countPath;
  return {
    ...(countPath === undefined
      ? {}
      : {
          async countTokens(body: NativeBody, context: CallContext): Promise<number> {
            const request = { method: 'POST' as const, path: countPath, headers: upstream.headers(context), body: context.bodyJson ?? JSON.stringify(body) };
            const { value } = await upstream.http.readJson(await upstream.http.send(request, context.signal, context.apiKeyOverride), context.signal);
            const tokens = (value as { input_tokens?: unknown } | null)?.input_tokens;
            if (typeof tokens !== 'number') throw new GatewayError('upstream_invalid_response', { upstream: upstream.name, reason: 'no input_tokens in the count' });
            // Shown to the caller as it is: the count is checked like every figure of usage.
            return saneTokens(tokens);
          },
        }),
    async complete(body, context): Promise<ChatCompletionResult> {
      const { bytes, value } = await upstream.http.readJson(await send(body, context), context.signal);
      if (!wire.isAnswer(value)) throw new GatewayError('upstream_invalid_response', { upstream: upstream.name, reason: 'not an answer of this API' });
      const usage = wire.answerUsage(value);
      return { body: anomaliesOf(usage) ? Buffer.from(JSON.stringify(value)) : bytes, usage };
    },
    stream(body, context): AsyncGenerator<StreamBatch> {
      const secrets = upstream.secrets(context);
      const totals: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
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
          batch.push(forwardedEvent(event, upstream.name, secrets, wire, totals));
          return wire.finalEvents.has(event.event);
        },
        end: (ending) => {
          if (ending === 'marker') return undefined;
          throw new GatewayError('upstream_stream_truncated', { upstream: upstream.name, reason: 'the stream ended before its final event' });
        },
      });
    },
  };
}

/**
 * One upstream event, passed on as it came (scrubbed); the final one also carries the usage for the pipeline.
 * Both APIs name every event and send one JSON object as its data, so a frame without a name (the parser's
 * default `message`, a type neither API has) or whose data is not object-shaped is not theirs — a proxy's error
 * text, a `[DONE]`, a cut line — and ends the stream as `upstream_stream_malformed`, as a bad frame does on the
 * translated path, instead of reaching the caller's SDK as an event it cannot read.
 */
function forwardedEvent(event: SseEvent, upstream: string, secrets: ReadonlyArray<string | undefined>, wire: NativeWire, totals: Usage): StreamChunk {
  if (wire.failureEvents.has(event.event)) {
    throw new GatewayError('upstream_stream_error', { upstream, ...providerErrorDetails(failureText(event.data), secrets) });
  }
  if (event.event === 'message') throw malformedFrame(upstream, 'an event with no event name', event.data, secrets);
  if (!objectShaped(event.data)) throw malformedFrame(upstream, `the ${event.event} event's data is not a JSON object`, event.data, secrets);
  let data = scrubText(event.data, secrets);
  const chunk: ChatCompletionChunk = { object: 'chat.completion.chunk', choices: [] };
  if (wire.usageEvents.has(event.event)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      throw new GatewayError('upstream_stream_malformed', { upstream, reason: `the ${event.event} event is not valid JSON` });
    }
    if (wire.addUsage(event.event, parsed, totals)) data = JSON.stringify(parsed);
  }
  if (wire.finalEvents.has(event.event) && (totals.total_tokens > 0 || anomaliesOf(totals))) chunk.usage = { ...totals };
  return { chunk, json: data, event: event.event };
}

/**
 * Whether `data` begins with `{` and ends with `}` (whitespace aside): the check of every passed-through event,
 * not a parse. Measured per 173-byte delta event: the shape check ~6 ns, a JSON.parse ~0.5 µs and an object to
 * collect, the scrubbing the event gets anyway ~15 µs. What a wrong frame is in practice (text, HTML, `[DONE]`, an
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
  try {
    const parsed = JSON.parse(data) as { response?: { error?: unknown }; error?: unknown; message?: unknown; code?: unknown };
    const error = parsed.response?.error ?? parsed.error ?? { message: parsed.message, code: parsed.code };
    return JSON.stringify({ error });
  } catch {
    return data;
  }
}

/** OpenAI's Responses API: usage in the final `response.completed` / `response.incomplete` event. */
export const RESPONSES_WIRE: NativeWire = {
  finalEvents: new Set(['response.completed', 'response.incomplete']),
  failureEvents: new Set(['response.failed', 'error']),
  isAnswer: (value) => (value as { object?: unknown } | null)?.object === 'response',
  answerUsage: (value) => responsesUsage((value as { usage?: unknown }).usage),
  usageEvents: new Set(['response.completed', 'response.incomplete']),
  addUsage(_event, data, totals) {
    const usage = responsesUsage((data as { response?: { usage?: unknown } } | null)?.response?.usage);
    if (usage) Object.assign(totals, usage);
    return anomaliesOf(usage) !== undefined;
  },
};

/** A Responses usage object (corrected in place); undefined when it is none or has neither count. */
function responsesUsage(value: unknown): Usage | undefined {
  return countsOf(value, RESPONSES_COUNTS);
}

/**
 * Anthropic's Messages API: input tokens in `message_start` (cache reads and writes counted as input), output
 * tokens in `message_delta`; the stream ends with `message_stop`.
 */
export const MESSAGES_WIRE: NativeWire = {
  finalEvents: new Set(['message_stop']),
  failureEvents: new Set(['error']),
  isAnswer: (value) => (value as { type?: unknown } | null)?.type === 'message',
  answerUsage: (value) => {
    const totals: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    addMessagesUsage((value as { usage?: unknown }).usage, totals);
    return totals.total_tokens > 0 || anomaliesOf(totals) ? totals : undefined;
  },
  usageEvents: new Set(['message_start', 'message_delta']),
  addUsage(event, data, totals) {
    const usage = event === 'message_start' ? (data as { message?: { usage?: unknown } } | null)?.message?.usage : (data as { usage?: unknown } | null)?.usage;
    return addMessagesUsage(usage, totals);
  },
};

const MESSAGES_FIGURES = ['input_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens', 'output_tokens'];

/** Adds a Messages usage object (corrected in place) to the totals; whether a figure had to be corrected. */
function addMessagesUsage(value: unknown, totals: Usage): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const usage = value as Record<string, unknown>;
  const found = correctInPlace(usage, MESSAGES_FIGURES) ?? [];
  const input = saneTokens(usage.input_tokens) + saneTokens(usage.cache_creation_input_tokens) + saneTokens(usage.cache_read_input_tokens);
  if (input > 0) totals.prompt_tokens = saneTokens(input, found);
  if (usage.output_tokens != null) totals.completion_tokens = saneTokens(usage.output_tokens);
  totals.total_tokens = totals.prompt_tokens + totals.completion_tokens;
  withAnomalies(totals, found);
  return found.length > 0;
}
