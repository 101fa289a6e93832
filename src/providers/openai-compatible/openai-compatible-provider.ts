import type { Dispatcher } from 'undici';
import type { UpstreamConfig } from '../../config/types.js';
import { GatewayError, isGatewayError } from '../../errors/gateway-error.js';
import { OPENAI_CHAT_EXTRAS } from '../provider-contract.js';
import type {
  CallContext,
  ChatCompletionResult,
  ChatRequestBody,
  EmbeddingsRequestBody,
  EmbeddingsResult,
  ChatExtra,
  NativeApi,
  NativeApiName,
  NativeBatchApi,
  Provider,
  StreamBatch,
  UpstreamFiles,
  UpstreamModel,
} from '../provider-contract.js';
import { anomaliesOf, countsOf, embeddingUsage } from '../usage-figures.js';
import { UpstreamClient, addCallHeaders, expectEventStream } from '../upstream-client.js';
import { streamChunkDecoder } from './decode-chunk.js';
import { normaliseAnswer } from './normalise-answer.js';
import { RESPONSES_WIRE, nativePassthrough } from '../native-passthrough.js';
import { providerKind } from '../../config/provider-presets.js';
import { endAtMarker, readEventStream } from '../event-stream-reader.js';
import { ChatStreamScrub, callScrubber, scrubbedAnswer } from '../chat-scrub.js';
import { OpenAiBatches } from './openai-batches-client.js';
import { OpenAiFiles } from './openai-files-client.js';

/**
 * Any server that speaks OpenAI's Chat Completions API: OpenAI itself, vLLM, Ollama, llama.cpp, LM Studio...
 * One keep-alive undici Pool per upstream with a bounded number of connections; undici's own headers and body
 * timeouts give the first-byte and idle timeouts, the connector's timeout the connect timeout.
 */
export class OpenAiCompatibleProvider implements Provider {
  readonly kind: string;
  readonly probeable = true;
  readonly name: string;
  private readonly http: UpstreamClient;
  private readonly basePath: string;
  private readonly config: UpstreamConfig;
  private readonly userAgent: string;
  /** `stream_usage: auto` and this upstream refused `stream_options` once: it is not asked again. */
  private refusesStreamUsage = false;
  /** The chat body goes as it is: every field of OpenAI's chat API; web search where the kind is known to take it. */
  readonly chatExtras: ReadonlySet<ChatExtra>;
  /** OpenAI's Responses API, where the upstream kind speaks it (`nativeResponses` in config/provider-presets.ts). */
  readonly native?: Partial<Record<NativeApiName, NativeApi>>;
  /** OpenAI's Batch API, where the config says the upstream has it (`batch: native`, the default for `openai`). */
  readonly batches?: NativeBatchApi;
  /** OpenAI's Files API, for the gateway's files a request names (`filesApi` in config/provider-presets.ts). */
  readonly files?: UpstreamFiles;

  constructor(config: UpstreamConfig, options: { userAgent: string }) {
    this.name = config.name;
    this.kind = config.kind;
    this.config = config;
    this.userAgent = options.userAgent;
    this.http = new UpstreamClient(config);
    this.basePath = this.http.basePath;
    this.chatExtras =
      providerKind(config.kind)?.chatWebSearch === true
        ? new Set([...OPENAI_CHAT_EXTRAS, 'web_search_options'])
        : OPENAI_CHAT_EXTRAS;
    if (providerKind(config.kind)?.nativeResponses === true) {
      this.native = {
        responses: nativePassthrough(
          {
            name: this.name,
            http: this.http,
            path: this.responsesPath(),
            headers: (context) => this.headers(context.apiKeyOverride ?? this.config.apiKey, context),
            secrets: (context) => [context.apiKeyOverride, this.config.apiKey],
          },
          RESPONSES_WIRE,
        ),
      };
    }
    if (providerKind(config.kind)?.filesApi === true && !config.deploymentInPath)
      this.files = new OpenAiFiles(this.http, this.name, (context) => {
        const headers = this.headers(context.apiKeyOverride ?? this.config.apiKey, context);
        headers.accept = 'application/json';
        return headers;
      });
    if (config.batch === 'native' && !config.deploymentInPath)
      this.batches = new OpenAiBatches(this.http, config, (json) => {
        const headers = this.headers(this.config.apiKey);
        if (!json) delete headers['content-type'];
        headers.accept = 'application/json';
        return headers;
      });
  }

  async chat(body: ChatRequestBody, context: CallContext): Promise<ChatCompletionResult> {
    const { bytes, text, value } = await this.http.readJson(await this.send(body, context), context.signal);
    const record = value as { choices?: unknown; usage?: unknown } | null;
    // Not a chat completion at all: the upstream's failure, counted against its circuit like any bad answer.
    if (typeof record !== 'object' || record === null || !Array.isArray(record.choices)) {
      throw new GatewayError('upstream_invalid_response', { upstream: this.name, reason: 'no choices array' });
    }
    // A completion with odd parts is made well formed by the rules of the stream's chunks (normalise-answer.ts), and
    // a usage figure out of range is corrected in it; its bytes pass through as received unless either changed.
    // Either way, the answer never carries the call's keys (chat-scrub.ts).
    const changed = normaliseAnswer(record as { choices: unknown[]; usage?: unknown }, 'message', body.model);
    const usage = countsOf(record.usage);
    const scrubber = callScrubber(this.config.apiKey, context);
    if (changed || anomaliesOf(usage)) return { body: scrubbedAnswer(JSON.stringify(record), scrubber), usage };
    return { body: scrubber === undefined ? bytes : scrubber.scrubBytes(bytes, text), usage };
  }

  streamChat(body: ChatRequestBody, context: CallContext): AsyncGenerator<StreamBatch> {
    // Usage on every stream (limits, cost): asked for on the caller's behalf, and its chunk kept from a caller
    // that did not ask for it.
    const options = body.stream_options as { include_usage?: unknown } | undefined;
    const addUsage = this.asksForUsage() && options?.include_usage !== true;
    const secrets = [context.apiKeyOverride, this.config.apiKey];
    const scrubber = callScrubber(this.config.apiKey, context);
    const decodeChunk = streamChunkDecoder(this.name, secrets, scrubber, body.model);
    const scrub = ChatStreamScrub.of(scrubber, this.name);
    return readEventStream({
      upstream: this.name,
      signal: context.signal,
      open: async () => {
        let response: Dispatcher.ResponseData;
        if (!addUsage) response = await this.send(body, context);
        else {
          try {
            response = await this.send(body, { ...context, bodyJson: withUsageRequested(body, context.bodyJson) });
          } catch (error) {
            if (this.config.streamUsage !== 'auto' || !refusedTheRequest(error)) throw error;
            // `auto`: the server may not know stream_options. Once more as the caller sent it; if that is accepted,
            // the field was the problem, and this upstream is not asked again (if not, the caller's body was).
            response = await this.send(body, context);
            this.refusesStreamUsage = true;
          }
        }
        expectEventStream(response, this.name, secrets);
        return response;
      },
      translate: (event, batch) => {
        if (event.data === '[DONE]') {
          const held = scrub?.end();
          if (held) batch.push(held);
          return true;
        }
        const chunk = decodeChunk(event);
        if (chunk) {
          if (addUsage && chunk.chunk.usage && chunk.chunk.choices.length === 0) chunk.internal = true;
          scrub?.chunk(chunk);
          batch.push(chunk);
        }
        return false;
      },
      end: endAtMarker(this.name, 'the stream ended without its end marker'),
    });
  }

  private asksForUsage(): boolean {
    return this.config.streamUsage === 'on' || (this.config.streamUsage === 'auto' && !this.refusesStreamUsage);
  }

  async embed(body: EmbeddingsRequestBody, context: CallContext): Promise<EmbeddingsResult> {
    const path = this.config.deploymentInPath
      ? `${this.basePath}/deployments/${encodeURIComponent(body.model)}/embeddings?api-version=${this.apiVersion()}`
      : `${this.basePath}/embeddings`;
    const headers = this.headers(context.apiKeyOverride ?? this.config.apiKey, context);
    const response = await this.http.send(
      { method: 'POST', path, headers, body: context.bodyJson ?? JSON.stringify(body) },
      context.signal,
      context.apiKeyOverride,
    );
    const { bytes, text, value } = await this.http.readJson(response, context.signal);
    const record = value as { data?: unknown; usage?: { prompt_tokens?: unknown; total_tokens?: unknown } } | null;
    if (typeof record !== 'object' || record === null || !Array.isArray(record.data)) {
      throw new GatewayError('upstream_invalid_response', { upstream: this.name, reason: 'no data array' });
    }
    // Only the prompt counts (an embedding has no completion); its total is the prompt's.
    const usage = record.usage?.prompt_tokens == null ? undefined : countsOf(record.usage);
    const counted = usage && embeddingUsage(usage);
    // Passed through as it came (unless a usage figure was corrected), but never with a key in it (a server may
    // echo one, in `model` or anywhere).
    const scrubber = callScrubber(this.config.apiKey, context);
    const answer = anomaliesOf(usage)
      ? scrubbedAnswer(JSON.stringify(record), scrubber)
      : (scrubber?.scrubBytes(bytes, text) ?? bytes);
    return { kind: 'openai', body: answer, usage: counted };
  }

  async listModels(signal: AbortSignal): Promise<UpstreamModel[]> {
    const path = this.config.deploymentInPath
      ? `${this.basePath}/models?api-version=${this.apiVersion()}`
      : `${this.basePath}/models`;
    const data = await this.http.getList(path, this.headers(this.config.apiKey), 'data', signal);
    return data
      .filter((m): m is { id: string; created?: unknown; owned_by?: unknown } => typeof m.id === 'string')
      .map((m) => ({
        id: m.id,
        createdAt: typeof m.created === 'number' ? new Date(m.created * 1000).toISOString() : undefined,
        ownedBy: typeof m.owned_by === 'string' ? m.owned_by : undefined,
      }));
  }

  async close(): Promise<void> {
    await this.http.close();
  }

  private send(body: ChatRequestBody, context: CallContext): Promise<Dispatcher.ResponseData> {
    return this.http.send(
      {
        method: 'POST',
        path: this.chatPath(body.model),
        headers: this.headers(context.apiKeyOverride ?? this.config.apiKey, context),
        body: context.bodyJson ?? JSON.stringify(body),
      },
      context.signal,
      context.apiKeyOverride,
    );
  }

  /** `{base}/chat/completions`, or Azure's `{base}/deployments/{deployment}/chat/completions?api-version=...`. */
  private chatPath(model: string): string {
    if (!this.config.deploymentInPath) return `${this.basePath}/chat/completions`;
    return `${this.basePath}/deployments/${encodeURIComponent(model)}/chat/completions?api-version=${this.apiVersion()}`;
  }

  /**
   * `{base}/responses`; on Azure, its v1 API: `{resource}/openai/v1/responses` (the deployment named by `model` in
   * the body, the key in `api-key`), whether `base_url` ends with `/openai` or `/openai/v1`.
   */
  private responsesPath(): string {
    if (!this.config.deploymentInPath) return `${this.basePath}/responses`;
    return this.basePath.endsWith('/v1') ? `${this.basePath}/responses` : `${this.basePath}/v1/responses`;
  }

  private apiVersion(): string {
    return encodeURIComponent(this.config.apiVersion ?? '');
  }

  /**
   * The upstream gets only headers the gateway chose. No caller header is copied, so neither the admin token,
   * X-Upstream-Key itself nor hop-by-hop headers (Connection, Keep-Alive, TE, Upgrade...) can leak upstream.
   */
  private headers(apiKey: string | undefined, call?: CallContext): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'user-agent': this.userAgent,
    };
    if (apiKey && this.config.auth === 'api-key') headers['api-key'] = apiKey;
    else if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    if (call) addCallHeaders(headers, call);
    return headers;
  }
}

/**
 * The body with `stream_options.include_usage: true`. When the caller's bytes are forwarded and they carry no
 * `stream_options`, the field is appended to them instead of serialising the whole body again (a long
 * conversation costs a full JSON.stringify per stream otherwise).
 */
function withUsageRequested(body: ChatRequestBody, raw: string | undefined): string {
  if (raw !== undefined && body.stream_options === undefined) {
    const end = raw.lastIndexOf('}');
    if (end > 0) return `${raw.slice(0, end)},"stream_options":{"include_usage":true}}`;
  }
  const options = body.stream_options as Record<string, unknown> | undefined;
  return JSON.stringify({ ...body, stream_options: { ...options, include_usage: true } });
}

/** The upstream said the request itself was wrong (400 or 422): what an unknown field gets. */
function refusedTheRequest(error: unknown): boolean {
  if (!isGatewayError(error) || error.code !== 'upstream_rejected_request') return false;
  return error.status === 400 || error.status === 422;
}
