import type { Dispatcher } from 'undici';
import { GatewayError } from '../../errors/gateway-error.js';
import { scrubText } from '../../secrets/redact.js';
import { SseParser, type SseEvent } from '../../streaming/sse-parser.js';
import type { CallContext, ChatCompletionChunk, ChatCompletionResult, NativeResponses, NativeResponsesBody, StreamBatch, StreamChunk, Usage } from '../contract.js';
import { discardBody, drainQuietly } from '../response-body.js';
import { toUpstreamError } from '../transport-errors.js';
import { providerErrorDetails } from '../upstream-http-error.js';
import { expectEventStream, type UpstreamClient } from '../upstream-client.js';

/** The events that end a Responses stream well. */
const FINAL_EVENTS = new Set(['response.completed', 'response.incomplete']);

interface Upstream {
  name: string;
  http: UpstreamClient;
  path: string;
  headers(context: CallContext): Record<string, string>;
  secrets(context: CallContext): ReadonlyArray<string | undefined>;
}

/**
 * OpenAI's Responses API spoken natively: `POST {base}/responses`, the caller's request and the upstream's answer
 * passed through. Each event's data is scrubbed of the keys in use (an upstream may repeat one back) and read
 * only for what the gateway needs: the final usage, and whether the stream ended well (`response.completed` or
 * `response.incomplete`). `response.failed` and `error` events become our `upstream_stream_error`; a stream that
 * closes before a final event is `upstream_stream_truncated`.
 */
export function nativeResponses(upstream: Upstream): NativeResponses {
  const send = (body: NativeResponsesBody, context: CallContext): Promise<Dispatcher.ResponseData> =>
    upstream.http.send(
      { method: 'POST', path: upstream.path, headers: upstream.headers(context), body: context.bodyJson ?? JSON.stringify(body) },
      context.signal,
      context.apiKeyOverride,
    );
  return {
    async complete(body, context): Promise<ChatCompletionResult> {
      const { bytes, value } = await upstream.http.readJson(await send(body, context), context.signal);
      const record = value as { object?: unknown; usage?: unknown } | null;
      if (typeof record !== 'object' || record === null || record.object !== 'response') {
        throw new GatewayError('upstream_invalid_response', { upstream: upstream.name, reason: 'not a response object' });
      }
      return { body: bytes, usage: usageOf(record.usage) };
    },
    async *stream(body, context): AsyncGenerator<StreamBatch> {
      const response = await send(body, context);
      const secrets = upstream.secrets(context);
      expectEventStream(response, upstream.name, secrets);
      const pending: SseEvent[] = [];
      const parser = new SseParser((event) => pending.push(event));
      let finished = false;
      try {
        for await (const bytes of response.body.iterator({ destroyOnReturn: false })) {
          parser.feed(bytes as Buffer);
          const batch: StreamChunk[] = [];
          let failure: unknown;
          try {
            for (const event of pending) {
              batch.push(forwardedEvent(event, upstream.name, secrets));
              if (FINAL_EVENTS.has(event.event)) finished = true;
            }
          } catch (error) {
            failure = error; // the events before the failure still go out, then the failure (as on the chat path)
          }
          pending.length = 0;
          if (batch.length > 0) yield batch;
          if (failure !== undefined) throw failure;
          if (finished) break;
        }
      } catch (error) {
        throw toUpstreamError(error, upstream.name, context.signal);
      } finally {
        if (finished) drainQuietly(response.body);
        else discardBody(response.body);
      }
      if (!finished) throw new GatewayError('upstream_stream_truncated', { upstream: upstream.name, reason: 'the stream ended before response.completed' });
    },
  };
}

/** One upstream event, passed on as it came (scrubbed); the final one also carries its usage for the pipeline. */
function forwardedEvent(event: SseEvent, upstream: string, secrets: ReadonlyArray<string | undefined>): StreamChunk {
  if (event.event === 'error' || event.event === 'response.failed') {
    throw new GatewayError('upstream_stream_error', { upstream, ...providerErrorDetails(failureText(event.data), secrets) });
  }
  const data = scrubText(event.data, secrets);
  const chunk: ChatCompletionChunk = { object: 'chat.completion.chunk', choices: [] };
  if (FINAL_EVENTS.has(event.event)) {
    let parsed: { response?: { usage?: unknown } };
    try {
      parsed = JSON.parse(data) as { response?: { usage?: unknown } };
    } catch {
      throw new GatewayError('upstream_stream_malformed', { upstream, reason: `the ${event.event} event is not valid JSON` });
    }
    const usage = usageOf(parsed.response?.usage);
    if (usage) chunk.usage = usage;
  }
  return { chunk, json: data, event: event.event };
}

/** A `response.failed` event's error (`response.error`) in the `{error: {...}}` shape the error reader knows. */
function failureText(data: string): string {
  try {
    const parsed = JSON.parse(data) as { response?: { error?: unknown }; error?: unknown; message?: unknown; code?: unknown };
    const error = parsed.response?.error ?? parsed.error ?? { message: parsed.message, code: parsed.code };
    return JSON.stringify({ error });
  } catch {
    return data;
  }
}

/** Responses usage (`input_tokens`, `output_tokens`) as the gateway's usage. */
function usageOf(value: unknown): Usage | undefined {
  const usage = value as { input_tokens?: unknown; output_tokens?: unknown } | null | undefined;
  if (typeof usage?.input_tokens !== 'number' || typeof usage.output_tokens !== 'number') return undefined;
  return { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens, total_tokens: usage.input_tokens + usage.output_tokens };
}
