import type { Dispatcher } from 'undici';
import type { UpstreamConfig } from '../../config/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type {
  CallContext,
  ChatCompletionResult,
  ChatExtra,
  ChatRequestBody,
  NativeApi,
  NativeApiName,
  Provider,
  StreamBatch,
  UpstreamModel,
} from '../provider-contract.js';
import { MESSAGES_WIRE, nativePassthrough } from '../native-passthrough.js';
import { completionJson } from '../completion-json.js';
import { ChatStreamScrub, callScrubber, scrubbedAnswer } from '../chat-scrub.js';
import { UpstreamClient, addCallHeaders, expectEventStream } from '../upstream-client.js';
import type { NativeBatchApi } from '../batch-api.js';
import { AnthropicMessageBatches } from './message-batches.js';
import { AnthropicStreamTranslator } from './stream-translator.js';
import { toAnthropicRequest } from './translate-request.js';
import { fromAnthropicMessage } from './translate-response.js';
import { endAtMarker, readEventStream } from '../event-stream-reader.js';
import { countedChunk } from '../usage-figures.js';
import { objectOf } from '../../wire/json.js';

/** The Messages API version this adapter speaks (sent as `anthropic-version`). */
export const ANTHROPIC_VERSION = '2023-06-01';

/**
 * Anthropic's Messages API (`POST {base}/messages`, key in `x-api-key`). The chat body is translated to a
 * Messages request and the answer (or each stream event) back to the chat-completions shape by pure functions;
 * the shared SSE parser is the only parser. Same pool, timeouts and error model as the OpenAI-compatible provider.
 */
export class AnthropicProvider implements Provider {
  readonly kind = 'anthropic';
  readonly probeable = true;
  /** Web search as Anthropic's server tool, one call at a time as `disable_parallel_tool_use`, `user` as `metadata.user_id` (translate-request.ts). */
  readonly chatExtras: ReadonlySet<ChatExtra> = new Set(['web_search_options', 'parallel_tool_calls', 'user']);
  readonly name: string;
  private readonly http: UpstreamClient;
  /** The Messages API itself: a Messages request to this upstream is forwarded untranslated. */
  readonly native: Partial<Record<NativeApiName, NativeApi>>;
  /** Anthropic's Message Batches (message-batches.ts): a batch routed wholly here is forwarded at the batch price. */
  readonly batches: NativeBatchApi;

  constructor(
    private readonly config: UpstreamConfig,
    private readonly options: { userAgent: string },
  ) {
    this.name = config.name;
    this.http = new UpstreamClient(config);
    this.native = {
      messages: nativePassthrough(
        {
          name: this.name,
          http: this.http,
          path: `${this.http.basePath}/messages`,
          countPath: `${this.http.basePath}/messages/count_tokens`,
          headers: (context) => this.headers(context.apiKeyOverride ?? this.config.apiKey, context),
          secrets: (context) => [context.apiKeyOverride, this.config.apiKey],
        },
        MESSAGES_WIRE,
      ),
    };
    this.batches = new AnthropicMessageBatches(this.http, config, () => this.headers(this.config.apiKey));
  }

  async chat(body: ChatRequestBody, context: CallContext): Promise<ChatCompletionResult> {
    const { value } = await this.http.readJson(await this.send(body, context), context.signal);
    const translated = fromAnthropicMessage(value, body.model, Math.floor(Date.now() / 1000));
    if (!translated)
      throw new GatewayError('upstream_invalid_response', { upstream: this.name, reason: 'not an Anthropic message' });
    const answer = scrubbedAnswer(completionJson(translated.completion), callScrubber(this.config.apiKey, context));
    return { body: answer, usage: translated.usage };
  }

  streamChat(body: ChatRequestBody, context: CallContext): AsyncGenerator<StreamBatch> {
    // The usage chunk always comes (limits, cost, a Responses stream's `usage`); hidden when the caller did not ask.
    const asked = objectOf(body.stream_options)?.include_usage === true;
    const translator = new AnthropicStreamTranslator(body.model, Math.floor(Date.now() / 1000), this.name, true, [
      context.apiKeyOverride,
      this.config.apiKey,
    ]);
    const scrub = ChatStreamScrub.of(callScrubber(this.config.apiKey, context), this.name);
    return readEventStream({
      upstream: this.name,
      signal: context.signal,
      open: async () => {
        const response = await this.send(body, context);
        expectEventStream(response, this.name, [context.apiKeyOverride, this.config.apiKey]);
        return response;
      },
      translate: (event, batch) => {
        for (const chunk of translator.translate(event)) {
          const item =
            asked || chunk.choices.length > 0 ? countedChunk(chunk) : { ...countedChunk(chunk), internal: true };
          scrub?.chunk(item);
          batch.push(item);
        }
        const held = translator.done ? scrub?.end() : undefined;
        if (held) batch.push(held);
        return translator.done;
      },
      end: endAtMarker(this.name, 'the stream ended without message_stop'),
    });
  }

  /** `GET {base}/models`: `{data: [{id, display_name, created_at}]}`. */
  async listModels(signal: AbortSignal): Promise<UpstreamModel[]> {
    const data = await this.http.getList(
      `${this.http.basePath}/models`,
      this.headers(this.config.apiKey),
      'data',
      signal,
    );
    return data
      .filter((m): m is { id: string; created_at?: unknown } => typeof m.id === 'string')
      .map((m) => ({
        id: m.id,
        createdAt: typeof m.created_at === 'string' ? new Date(m.created_at).toISOString() : undefined,
        ownedBy: 'anthropic',
      }));
  }

  async close(): Promise<void> {
    await this.http.close();
  }

  /** The chat service hands over a body whose `stream` already says which answer is wanted. */
  private async send(body: ChatRequestBody, context: CallContext): Promise<Dispatcher.ResponseData> {
    const request = toAnthropicRequest(body, body.model, this.config.defaultMaxTokens, context.promptCache ?? 'auto');
    return this.http.send(
      {
        method: 'POST',
        path: `${this.http.basePath}/messages`,
        headers: this.headers(context.apiKeyOverride ?? this.config.apiKey, context),
        body: JSON.stringify(request),
      },
      context.signal,
      context.apiKeyOverride,
    );
  }

  /** Only headers the gateway chose go upstream (nothing of the caller's request is copied). */
  private headers(apiKey: string | undefined, call?: CallContext): Record<string, string> {
    // An object literal each time: V8 builds it with a fixed shape (a spread of a template measured slower).
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'anthropic-version': ANTHROPIC_VERSION,
      'user-agent': this.options.userAgent,
    };
    if (apiKey) headers['x-api-key'] = apiKey;
    if (call) {
      addCallHeaders(headers, call);
      // A native Messages call: the caller's API version and betas go with its untranslated body.
      const forwarded = call.forwardHeaders;
      if (forwarded?.['anthropic-version'] !== undefined) headers['anthropic-version'] = forwarded['anthropic-version'];
      if (forwarded?.['anthropic-beta'] !== undefined) headers['anthropic-beta'] = forwarded['anthropic-beta'];
    }
    return headers;
  }
}
