import type { Dispatcher } from 'undici';
import { GatewayError } from '../../errors/gateway-error.js';
import { KeyScrubber, scrubAnswer } from '../../secrets/key-scrubber.js';
import type { GeminiGenerateResponse } from '../../wire/gemini.js';
import { isJsonObject, type Received } from '../../wire/received.js';
import type {
  CallContext,
  ChatCompletionResult,
  NativeApi,
  NativeBody,
  StreamBatch,
  StreamChunk,
  Usage,
} from '../provider-contract.js';
import { readEventStream, truncatedStream } from '../event-stream-reader.js';
import { malformedFrame } from '../malformed-frame.js';
import { providerErrorDetails } from '../upstream-http-error.js';
import { expectEventStream, type UpstreamClient } from '../upstream-client.js';
import { anomaliesOf, saneTokens } from '../usage-figures.js';
import { correctedUsageMetadata } from './usage-metadata.js';

/** How the native Gemini API reaches one upstream: its client, base path, headers and the keys to scrub. */
export interface GeminiUpstream {
  name: string;
  http: UpstreamClient;
  headers(context: CallContext): Record<string, string>;
  secrets(context: CallContext): ReadonlyArray<string | undefined>;
}

/**
 * Google's Gemini API spoken natively: a request of the gateway's Gemini surface to a Gemini upstream goes as the
 * caller wrote it (thought signatures, safety settings, Google's own tools untouched), to the model of the target
 * (`body.model`, which the surface set from the URL and the router may have renamed), and the upstream's answer or
 * events come back as they were sent, scrubbed of the keys in use. Streams are always read as `alt=sse` (the
 * surface frames them for the caller: events or one JSON array). Each event carries the usage so far; the last one
 * read is the call's. A stream ends well when the body ends cleanly after a candidate with a `finishReason`; an
 * `{error}` event is `upstream_stream_error`; anything that is not a JSON object is `upstream_stream_malformed`.
 */
export function nativeGemini(upstream: GeminiUpstream): NativeApi {
  const send = (body: NativeBody, context: CallContext, action: string): Promise<Dispatcher.ResponseData> =>
    upstream.http.send(
      {
        method: 'POST',
        path: pathOf(upstream.http.basePath, body.model, action),
        headers: upstream.headers(context),
        body: context.bodyJson ?? geminiBytes(body),
      },
      context.signal,
      context.apiKeyOverride,
    );
  return {
    async countTokens(body, context): Promise<number> {
      const counted = await upstream.http.readJson(
        await send(countRequest(body), { ...context, bodyJson: undefined }, 'countTokens'),
        context.signal,
      );
      const value = counted.value as { totalTokens?: unknown } | null;
      if (typeof value?.totalTokens !== 'number')
        throw new GatewayError('upstream_invalid_response', {
          upstream: upstream.name,
          reason: 'no totalTokens in the count',
        });
      return saneTokens(value.totalTokens);
    },
    async complete(body, context): Promise<ChatCompletionResult> {
      const { bytes, text, value } = await upstream.http.readJson(
        await send(body, context, 'generateContent'),
        context.signal,
      );
      if (!isJsonObject(value) || !Array.isArray((value as Received<GeminiGenerateResponse>).candidates)) {
        throw new GatewayError('upstream_invalid_response', {
          upstream: upstream.name,
          reason: 'not a GenerateContentResponse',
        });
      }
      // A usage figure out of range is corrected in the answer, which then goes out written again.
      const usage = correctedUsageMetadata((value as Received<GeminiGenerateResponse>).usageMetadata);
      const secrets = upstream.secrets(context);
      if (anomaliesOf(usage) === undefined) return { body: scrubAnswer(bytes, text, secrets), usage };
      const json = JSON.stringify(value);
      return { body: Buffer.from(KeyScrubber.of(secrets)?.scrub(json) ?? json), usage };
    },
    stream(body, context): AsyncGenerator<StreamBatch> {
      const secrets = upstream.secrets(context);
      const scrubber = KeyScrubber.of(secrets);
      let usage: Usage | undefined;
      let finished = false;
      return readEventStream({
        upstream: upstream.name,
        signal: context.signal,
        open: async () => {
          const response = await send(body, context, 'streamGenerateContent?alt=sse');
          expectEventStream(response, upstream.name, secrets);
          return response;
        },
        translate: (event, batch) => {
          const read = readEvent(event.data, upstream.name, secrets, scrubber);
          usage = read.usage ?? usage;
          finished ||= read.finished;
          batch.push(read.chunk);
          return false; // Gemini's stream has no end marker: the body's clean end is
        },
        end: (ending) => {
          if (ending !== 'clean' || !finished)
            throw truncatedStream(upstream.name, ending, 'the stream ended before a candidate finished');
          // The usage rides on a chunk of its own that writes nothing (the events already carried it to the caller).
          return usage
            ? [{ chunk: { object: 'chat.completion.chunk', choices: [], usage }, internal: true }]
            : undefined;
        },
      });
    },
  };
}

/** `{base}/models/{model}:{action}`; the model as the URL's one segment (a `models/` prefix is the caller's spelling). */
function pathOf(base: string, model: string, action: string): string {
  return `${base}/models/${encodeURIComponent(model.replace(/^models\//, ''))}:${action}`;
}

/**
 * A `:countTokens` request for the target's model: the caller's `contents`, or its whole `generateContentRequest`
 * (system instruction and tools counted too) whose `model` Gemini requires, set to the target's.
 */
function countRequest(body: NativeBody): NativeBody {
  const whole = body.generateContentRequest;
  if (isJsonObject(whole))
    return {
      model: body.model,
      generateContentRequest: { ...whole, model: `models/${body.model.replace(/^models\//, '')}` },
    };
  return { model: body.model, contents: body.contents };
}

/** The request as Gemini takes it: without the two fields the surface added for the pipeline (`model`, `stream`). */
function geminiBytes(body: NativeBody): string {
  const { model: _model, stream: _stream, ...request } = body;
  return JSON.stringify(request);
}

/** One upstream event: passed on as it came (scrubbed), read for its usage and whether a candidate finished. */
function readEvent(
  data: string,
  upstream: string,
  secrets: ReadonlyArray<string | undefined>,
  scrubber: KeyScrubber | undefined,
): { chunk: StreamChunk; usage: Usage | undefined; finished: boolean } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    throw malformedFrame(upstream, 'an event whose data is not JSON', data, secrets);
  }
  if (!isJsonObject(parsed)) throw malformedFrame(upstream, "an event's data is not a JSON object", data, secrets);
  const response = parsed as Received<GeminiGenerateResponse> & { error?: unknown };
  if (response.error !== undefined)
    throw new GatewayError('upstream_stream_error', {
      upstream,
      ...providerErrorDetails(JSON.stringify({ error: response.error }), secrets),
    });
  const candidates = Array.isArray(response.candidates) ? (response.candidates as unknown[]) : [];
  const finished = candidates.some(
    (candidate) =>
      isJsonObject(candidate) && typeof (candidate as { finishReason?: unknown }).finishReason === 'string',
  );
  // A usage figure out of range is corrected in the event, which then goes out written again.
  const usage = correctedUsageMetadata(response.usageMetadata);
  const json = anomaliesOf(usage) === undefined ? data : JSON.stringify(parsed);
  return {
    chunk: { chunk: { object: 'chat.completion.chunk', choices: [] }, json: scrubber?.scrub(json) ?? json },
    usage,
    finished,
  };
}
