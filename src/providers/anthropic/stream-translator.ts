import { GatewayError } from '../../errors/gateway-error.js';
import { upstreamFieldDetails } from '../upstream-http-error.js';
import type { SseEvent } from '../../streaming/sse-parser.js';
import type { ChatCompletionChunk, Usage, UsageAnomaly } from '../provider-contract.js';
import { chatChunk, type ChunkDelta } from '../chat-chunk.js';
import { anomaliesOf, saneTokens, usageFrom, withAnomalies, withParts } from '../usage-figures.js';
import { finishReasonOf } from '../../wire/anthropic.js';
import { fieldsOf, objectOf, textField, type JsonObject } from '../../wire/json.js';
import { usageOf } from './translate-response.js';

/**
 * Anthropic's stream events in OpenAI `chat.completion.chunk` form, one event at a time (pure apart from its own
 * state; the shared SSE parser feeds it). `message_start` gives the role chunk; text deltas become `content`
 * deltas; a `tool_use` block becomes a tool call (id and name first, then its `input_json_delta`s as argument
 * deltas, indexed in order of appearance); `message_delta` carries the finish reason and the output usage (and,
 * cumulative, the input and cache figures when they changed);
 * `message_stop` ends the stream (`done`), after a final usage chunk when the caller asked for one. `ping` is
 * ignored; an `error` event throws `upstream_stream_error` with the provider's type and message.
 */
export class AnthropicStreamTranslator {
  /** True once `message_stop` arrived: the only proper end of the stream. */
  done = false;
  private id = 'msg';
  private model: string;
  private inputUsage: Usage | undefined;
  private outputTokens = 0;
  /** What had to be corrected in the output counts of `message_delta` events. */
  private readonly found: UsageAnomaly[] = [];
  private finishReason: string | null = null;
  /** Anthropic content-block index -> OpenAI tool_calls index. */
  private readonly toolIndex = new Map<number, number>();

  constructor(
    upstreamModel: string,
    private readonly created: number,
    private readonly upstream: string,
    private readonly includeUsage: boolean,
    private readonly secrets: ReadonlyArray<string | undefined>,
  ) {
    this.model = upstreamModel;
  }

  /** The chunks for one event (often none). */
  translate(event: SseEvent): ChatCompletionChunk[] {
    let parsed: unknown;
    try {
      parsed = JSON.parse(event.data);
    } catch {
      throw new GatewayError('upstream_stream_malformed', { upstream: this.upstream, reason: 'an event is not JSON' });
    }
    // An array has none of the fields read below: it is the event its name says, without them.
    const data: JsonObject | undefined = fieldsOf(parsed);
    if (!data)
      throw new GatewayError('upstream_stream_malformed', {
        upstream: this.upstream,
        reason: 'an event is not a JSON object',
      });
    switch (data.type ?? event.event) {
      case 'message_start': {
        const message = objectOf(data.message) ?? {};
        if (typeof message.id === 'string') this.id = message.id;
        if (typeof message.model === 'string') this.model = message.model;
        this.inputUsage = usageOf(message.usage);
        this.outputTokens = this.inputUsage?.completion_tokens ?? 0;
        return [this.chunk({ role: 'assistant', content: '' })];
      }
      case 'content_block_start': {
        const block = objectOf(data.content_block) ?? {};
        if (block.type === 'tool_use') {
          const index = this.toolIndex.size;
          this.toolIndex.set(blockIndex(data.index), index);
          return [
            this.chunk({
              tool_calls: [
                {
                  index,
                  id: textField(block.id),
                  type: 'function',
                  function: { name: textField(block.name), arguments: '' },
                },
              ],
            }),
          ];
        }
        if (block.type === 'text' && typeof block.text === 'string' && block.text !== '')
          return [this.chunk({ content: block.text })];
        return [];
      }
      case 'content_block_delta': {
        const delta = objectOf(data.delta) ?? {};
        if (delta.type === 'text_delta' && typeof delta.text === 'string') return [this.chunk({ content: delta.text })];
        if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string') {
          const index = this.toolIndex.get(blockIndex(data.index));
          if (index === undefined || delta.partial_json === '') return [];
          return [this.chunk({ tool_calls: [{ index, function: { arguments: delta.partial_json } }] })];
        }
        return []; // thinking and signature deltas have no chat-completions form
      }
      case 'message_delta': {
        this.finishReason = finishReasonOf(objectOf(data.delta)?.stop_reason);
        const outputTokens = objectOf(data.usage)?.output_tokens;
        if (outputTokens != null) this.outputTokens = saneTokens(outputTokens, this.found);
        // Its figures are cumulative: input and cache figures there (after server tools ran) replace message_start's.
        const input = usageOf(data.usage);
        if (input && input.prompt_tokens > 0) this.inputUsage = input;
        return [this.chunk({}, this.finishReason ?? 'stop')];
      }
      case 'message_stop': {
        this.done = true;
        if (!this.includeUsage) return [];
        const usage = this.usage();
        return usage ? [{ ...this.chunk({}), choices: [], usage }] : [];
      }
      case 'error': {
        const error = objectOf(data.error) ?? {};
        throw new GatewayError('upstream_stream_error', {
          upstream: this.upstream,
          ...upstreamFieldDetails({ upstream_type: error.type, upstream_message: error.message }, this.secrets),
        });
      }
      default:
        return []; // ping, and event types added later
    }
  }

  /** Input and cache tokens from `message_start` (or a later `message_delta` that reports them), output tokens from the last `message_delta`. */
  usage(): Usage | undefined {
    if (!this.inputUsage) return undefined;
    const {
      cache_read_tokens: cacheRead,
      cache_write_tokens: cacheWrite,
      cache_write_1h_tokens: cacheWrite1h,
    } = this.inputUsage;
    const usage = usageFrom(this.inputUsage.prompt_tokens, this.outputTokens, undefined, [...this.found]);
    return withAnomalies(withParts(usage, { cacheRead, cacheWrite, cacheWrite1h }), anomaliesOf(this.inputUsage));
  }

  private chunk(delta: ChunkDelta, finishReason: string | null = null): ChatCompletionChunk {
    return chatChunk(this.id, this.created, this.model, delta, finishReason);
  }
}

/** A content block's `index`: a number on Anthropic's wire, NaN (as `Number(undefined)`) for anything else, never Number() of an upstream object. */
const blockIndex = (value: unknown): number => (typeof value === 'number' ? value : Number.NaN);
