import { GatewayError } from '../../errors/gateway-error.js';
import { withAnthropicError } from '../../http/anthropic-shape.js';
import { formatEvent } from '../../http/sse.js';
import type { StreamChunk, Usage } from '../../providers/provider-contract.js';
import type { StreamEncoder } from '../surface.js';
import { checkArguments, cutShort, MAX_STREAMED_ARGUMENTS_CHARS, toolCallFields } from '../tool-arguments.js';
import { stopReasonOf, type AnthropicStreamEventName, type AnthropicStreamEvents } from '../../wire/anthropic.js';
import { messageUsage } from './chat-to-message.js';
import type { McpEvent, McpToolLoop } from '../mcp-tools/mcp-loop.js';
import { sumUsage } from '../tool-turns/usage-sum.js';
import { mcpToolResultBlock, mcpToolUseBlock } from './mcp-blocks.js';

/**
 * One Anthropic Messages event stream, from chat chunks (a state machine per stream): `message_start`, then for
 * each content block in the order it starts (the answer's text; each tool call, by its chat index)
 * `content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`) / `content_block_stop`, a `ping`
 * after the first block starts, and at the end `message_delta` (stop reason and usage, input tokens included:
 * the upstream reports usage only in its last chunk) and `message_stop`. A failure after the first event is one
 * `error` event in Anthropic's shape and no `message_stop`.
 *
 * A tool_use block's `input_json_delta` pieces must add up to a JSON object, as the non-streamed `input` must be
 * one: the open block keeps its argument text (bounded) and is checked when it closes (src/surfaces/tool-arguments.ts).
 * Events are gathered in `pending` and handed out by each call, so when translating a chunk throws half-way, the
 * events it had already produced still go out, ahead of the `error` event.
 */
export class MessageStream implements StreamEncoder {
  private index = -1;
  private block:
    { kind: 'text' } | { kind: 'mcp' } | { kind: 'tool'; chatIndex: number; id: string; args: string } | undefined;
  private finishReason: string | null = null;
  private pinged = false;
  private pending = '';

  constructor(
    private readonly id: string,
    private readonly model: string,
    /** The prompt's tokens as counted before the upstream answers (`message_start`'s input_tokens; 0: not known). */
    private readonly inputEstimate = 0,
    /** The MCP servers the gateway runs for the message: each call a `mcp_tool_use` and a `mcp_tool_result` block. */
    private readonly mcp?: McpToolLoop,
  ) {}

  /** `message_start`, naming the model the upstream names (else the caller's), as the JSON answer does. */
  open(model?: string): string {
    this.event('message_start', {
      message: {
        id: this.id,
        type: 'message',
        role: 'assistant',
        model: model ?? this.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        // Anthropic's own `message_start` has the prompt's count; a translated upstream reports it only at the end
        // (in `message_delta`, which corrects this): the gateway's admission estimate meanwhile, no cache known yet.
        usage: {
          input_tokens: this.inputEstimate,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          output_tokens: 0,
        },
      },
    });
    return this.take();
  }

  chunk(item: StreamChunk): string {
    const mcpEvent = this.mcp?.eventOf(item.chunk);
    if (mcpEvent) {
      this.mcpBlocks(mcpEvent);
      return this.take();
    }
    const choice = item.chunk.choices[0];
    if (item.internal === true || !choice) return '';
    const delta = choice.delta;
    if (typeof delta.content === 'string' && delta.content !== '') {
      if (this.block?.kind !== 'text') this.start({ type: 'text', text: '' }, { kind: 'text' });
      this.event('content_block_delta', { index: this.index, delta: { type: 'text_delta', text: delta.content } });
    }
    if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) this.toolCall(call);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    return this.take();
  }

  end(usage: Usage | undefined): string {
    this.close(cutShort(this.finishReason));
    // A tool loop's earlier turns count too (surfaces/tool-turns/loop-stream.ts).
    const all = this.mcp ? sumUsage([this.mcp.earlierUsage, usage]) : usage;
    this.event('message_delta', {
      delta: { stop_reason: stopReasonOf(this.finishReason), stop_sequence: null },
      usage: messageUsage(all),
    });
    this.event('message_stop', {});
    return this.take();
  }

  fail(error: GatewayError): string {
    this.event('error', withAnthropicError(error.toBody(), error.status));
    return this.take();
  }

  private toolCall(piece: unknown): void {
    const call = toolCallFields(piece);
    if (!call) return;
    const chatIndex = call.index ?? 0;
    let block = this.block;
    if (block?.kind !== 'tool' || block.chatIndex !== chatIndex) {
      const id = call.id ?? `toolu_${this.id}_${chatIndex}`;
      block = { kind: 'tool', chatIndex, id, args: '' };
      this.start({ type: 'tool_use', id, name: call.name ?? '', input: {} }, block);
    }
    const args = call.arguments;
    if (args === undefined || args === '') return;
    if (block.args.length + args.length > MAX_STREAMED_ARGUMENTS_CHARS) {
      throw new GatewayError('upstream_invalid_response', {
        reason: `the arguments of function call ${block.id.slice(0, 64)} exceed ${MAX_STREAMED_ARGUMENTS_CHARS} characters`,
      });
    }
    block.args += args;
    this.event('content_block_delta', { index: this.index, delta: { type: 'input_json_delta', partial_json: args } });
  }

  /**
   * An MCP call as Anthropic streams a server tool's: when it starts, its `mcp_tool_use` block (input `{}`, then the
   * input as one `input_json_delta`) opened and closed; when it is done, its `mcp_tool_result` block, whole.
   */
  private mcpBlocks(event: McpEvent): void {
    if (event.kind === 'approval') return; // the Messages API asks for none
    if (event.kind === 'call_started') {
      const block = mcpToolUseBlock(event.run);
      this.start({ ...block, input: {} }, { kind: 'mcp' });
      const args = JSON.stringify(block.input);
      if (args !== '{}')
        this.event('content_block_delta', {
          index: this.index,
          delta: { type: 'input_json_delta', partial_json: args },
        });
      this.close(false);
      return;
    }
    this.start(mcpToolResultBlock(event.run), { kind: 'mcp' });
    this.close(false);
  }

  private start(
    block: AnthropicStreamEvents['content_block_start']['content_block'],
    opened: NonNullable<MessageStream['block']>,
  ): void {
    this.close(false);
    this.index += 1;
    this.block = opened;
    this.event('content_block_start', { index: this.index, content_block: block });
    if (!this.pinged) {
      this.pinged = true;
      this.event('ping', {});
    }
  }

  /** Closes the open block; a tool call that finished (not cut short) must hold a JSON object, or the stream fails here. */
  private close(cut: boolean): void {
    const block = this.block;
    if (!block) return;
    if (block.kind === 'tool' && !cut) checkArguments(block.args, block.id);
    this.block = undefined;
    this.event('content_block_stop', { index: this.index });
  }

  private event<T extends AnthropicStreamEventName>(type: T, fields: AnthropicStreamEvents[T]): void {
    this.pending += formatEvent(JSON.stringify({ type, ...fields }), { event: type });
  }

  /** The events produced since the last call, handed out once. */
  private take(): string {
    const frames = this.pending;
    this.pending = '';
    return frames;
  }
}
