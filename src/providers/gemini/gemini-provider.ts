import { randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import type { UpstreamConfig } from '../../config/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type {
  CallContext,
  ChatCompletionResult,
  ChatExtra,
  ChatRequestBody,
  EmbeddingsRequestBody,
  EmbeddingsResult,
  NativeApi,
  NativeBatchApi,
  NativeApiName,
  Provider,
  StreamBatch,
  StreamChunk,
  UpstreamModel,
} from '../provider-contract.js';
import { nativeGemini } from './native-gemini.js';
import { GeminiBatches } from './gemini-batches.js';
import { fromGeminiEmbedResponse, toGeminiEmbedRequest } from './translate-embeddings.js';
import { completionJson } from '../completion-json.js';
import { ChatStreamScrub, callScrubber, scrubbedAnswer } from '../chat-scrub.js';
import { UpstreamClient, addCallHeaders, expectEventStream } from '../upstream-client.js';
import { toGeminiRequest } from './translate-request.js';
import { GeminiStreamTranslator, fromGeminiResponse } from './translate-response.js';
import { readEventStream, truncatedStream } from '../event-stream-reader.js';
import { countedChunk } from '../usage-figures.js';

/**
 * Google's Gemini API: `POST {base}/models/{model}:generateContent`, and `:streamGenerateContent?alt=sse` for
 * streams. The key goes in the `x-goog-api-key` header, never in the URL. Translation is pure functions; the
 * shared SSE parser reads the stream.
 */
export class GeminiProvider implements Provider {
  readonly kind = 'gemini';
  readonly probeable = true;
  /** Web search as Google Search grounding (translate-request.ts); Gemini has none of the other fields. */
  readonly chatExtras: ReadonlySet<ChatExtra> = new Set(['web_search_options']);
  readonly name: string;
  /** Google's Gemini API spoken natively: the gateway's Gemini surface forwards to it untranslated. */
  readonly native: Partial<Record<NativeApiName, NativeApi>>;
  /** Gemini's Batch API (`batchGenerateContent`): a batch's chat lines forwarded at the batch price. */
  readonly batches: NativeBatchApi;
  private readonly http: UpstreamClient;

  constructor(
    private readonly config: UpstreamConfig,
    private readonly options: { userAgent: string },
  ) {
    this.name = config.name;
    this.http = new UpstreamClient(config);
    this.native = {
      gemini: nativeGemini({
        name: this.name,
        http: this.http,
        headers: (context) => this.headers(context.apiKeyOverride ?? this.config.apiKey, context),
        secrets: (context) => this.secrets(context),
      }),
    };
    this.batches = new GeminiBatches({
      name: this.name,
      http: this.http,
      headers: () => this.headers(this.config.apiKey),
      secrets: [this.config.apiKey],
    });
  }

  async chat(body: ChatRequestBody, context: CallContext): Promise<ChatCompletionResult> {
    const { value } = await this.http.readJson(await this.send(body, context, false), context.signal);
    const translated = fromGeminiResponse(value, {
      upstreamModel: body.model,
      upstream: this.name,
      id: `chatcmpl-${randomUUID()}`,
      created: Math.floor(Date.now() / 1000),
      secrets: this.secrets(context),
    });
    if (!translated)
      throw new GatewayError('upstream_invalid_response', { upstream: this.name, reason: 'no candidates array' });
    const answer = scrubbedAnswer(completionJson(translated.completion), callScrubber(this.config.apiKey, context));
    return { body: answer, usage: translated.usage };
  }

  streamChat(body: ChatRequestBody, context: CallContext): AsyncGenerator<StreamBatch> {
    const options = body.stream_options as { include_usage?: unknown } | undefined;
    // The usage chunk always comes (limits, cost, a Responses stream's `usage`); hidden when the caller did not ask.
    const asked = options?.include_usage === true;
    const translator = new GeminiStreamTranslator({
      upstreamModel: body.model,
      id: `chatcmpl-${randomUUID()}`,
      created: Math.floor(Date.now() / 1000),
      upstream: this.name,
      includeUsage: true,
      secrets: this.secrets(context),
    });
    const scrub = ChatStreamScrub.of(callScrubber(this.config.apiKey, context), this.name);
    return readEventStream({
      upstream: this.name,
      signal: context.signal,
      open: async () => {
        const response = await this.send(body, context, true);
        expectEventStream(response, this.name, this.secrets(context));
        return response;
      },
      translate: (event, batch) => {
        for (const chunk of translator.translate(event.data)) {
          const item: StreamChunk = { chunk };
          scrub?.chunk(item);
          batch.push(item);
        }
        return false; // no end marker in Gemini's stream
      },
      // A clean end of the body after a finished candidate is the end; then the usage chunk, if asked for.
      end: (ending) => {
        if (ending !== 'clean' || !translator.finished)
          throw truncatedStream(this.name, ending, 'the stream ended before the answer finished');
        const held = scrub?.end();
        const final = translator
          .final()
          .map((chunk) => (asked ? countedChunk(chunk) : { ...countedChunk(chunk), internal: true }));
        return held ? [held, ...final] : final;
      },
    });
  }

  /** The keys a call may have sent: whatever the upstream says back is scrubbed of them. */
  private secrets(context: CallContext): Array<string | undefined> {
    return [context.apiKeyOverride, this.config.apiKey];
  }

  /** `GET {base}/models`: `{models: [{name: "models/<id>", inputTokenLimit, ...}]}`. */
  async listModels(signal: AbortSignal): Promise<UpstreamModel[]> {
    const models = await this.http.getList(
      `${this.http.basePath}/models`,
      this.headers(this.config.apiKey),
      'models',
      signal,
    );
    return models
      .filter((m): m is { name: string } => typeof m.name === 'string')
      .map((m) => ({ id: m.name.replace(/^models\//, ''), createdAt: undefined, ownedBy: 'google' }));
  }

  /** `POST {base}/models/{model}:batchEmbedContents`: vectors back, usage left to the gateway's estimate (none is reported). */
  async embed(body: EmbeddingsRequestBody, context: CallContext): Promise<EmbeddingsResult> {
    const model = body.model.replace(/^models\//, '');
    const request = toGeminiEmbedRequest(body, model);
    const path = `${this.http.basePath}/models/${encodeURIComponent(model)}:batchEmbedContents`;
    const headers = this.headers(context.apiKeyOverride ?? this.config.apiKey, context);
    const response = await this.http.send(
      { method: 'POST', path, headers, body: JSON.stringify(request) },
      context.signal,
      context.apiKeyOverride,
    );
    const { value } = await this.http.readJson(response, context.signal);
    const vectors = fromGeminiEmbedResponse(value, request.requests.length);
    if (!vectors)
      throw new GatewayError('upstream_invalid_response', {
        upstream: this.name,
        reason: 'not one embedding of numbers per input',
      });
    return { kind: 'vectors', vectors, usage: undefined };
  }

  async close(): Promise<void> {
    await this.http.close();
  }

  private async send(body: ChatRequestBody, context: CallContext, stream: boolean): Promise<Dispatcher.ResponseData> {
    const model = encodeURIComponent(body.model.replace(/^models\//, ''));
    const base = this.http.basePath;
    const path = stream
      ? `${base}/models/${model}:streamGenerateContent?alt=sse`
      : `${base}/models/${model}:generateContent`;
    return this.http.send(
      {
        method: 'POST',
        path,
        headers: this.headers(context.apiKeyOverride ?? this.config.apiKey, context),
        body: JSON.stringify(toGeminiRequest(body)),
      },
      context.signal,
      context.apiKeyOverride,
    );
  }

  private headers(apiKey: string | undefined, call?: CallContext): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'user-agent': this.options.userAgent,
    };
    if (apiKey) headers['x-goog-api-key'] = apiKey;
    if (call) addCallHeaders(headers, call);
    return headers;
  }
}
