import type { GatewayError } from '../../errors/gateway-error.js';
import { withAnthropicError } from '../../http/anthropic-shape.js';
import { formatEvent } from '../../http/sse.js';
import type { StreamChunk, Usage } from '../../providers/contract.js';
import type { StreamEncoder } from '../surface.js';
import { messageUsage, stopReasonOf } from './chat-to-message.js';

interface ToolCallDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

/**
 * One Anthropic Messages event stream, from chat chunks (a state machine per stream): `message_start`, then for
 * each content block in the order it starts (the answer's text; each tool call, by its chat index)
 * `content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`) / `content_block_stop`, a `ping`
 * after the first block starts, and at the end `message_delta` (stop reason and usage, input tokens included:
 * the upstream reports usage only in its last chunk) and `message_stop`. A failure after the first event is one
 * `error` event in Anthropic's shape and no `message_stop`.
 */
export class MessageStream implements StreamEncoder {
  private index = -1;
  private block: { kind: 'text' } | { kind: 'tool'; chatIndex: number } | undefined;
  private finishReason: string | null = null;
  private pinged = false;

  constructor(
    private readonly id: string,
    private readonly model: string,
  ) {}

  open(): string {
    const message = { id: this.id, type: 'message', role: 'assistant', model: this.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } };
    return event('message_start', { message });
  }

  chunk(item: StreamChunk): string {
    const choice = item.chunk.choices[0];
    if (item.internal === true || !choice) return '';
    let frames = '';
    const delta = choice.delta;
    if (typeof delta.content === 'string' && delta.content !== '') {
      if (this.block?.kind !== 'text') frames += this.start({ type: 'text', text: '' }, { kind: 'text' });
      frames += event('content_block_delta', { index: this.index, delta: { type: 'text_delta', text: delta.content } });
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const call of delta.tool_calls as ToolCallDelta[]) {
        const chatIndex = typeof call.index === 'number' ? call.index : 0;
        if (this.block?.kind !== 'tool' || this.block.chatIndex !== chatIndex) {
          frames += this.start({ type: 'tool_use', id: call.id ?? `toolu_${this.id}_${chatIndex}`, name: call.function?.name ?? '', input: {} }, { kind: 'tool', chatIndex });
        }
        const args = call.function?.arguments;
        if (typeof args === 'string' && args !== '') frames += event('content_block_delta', { index: this.index, delta: { type: 'input_json_delta', partial_json: args } });
      }
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    return frames;
  }

  end(usage: Usage | undefined): string {
    return (
      this.close() +
      event('message_delta', { delta: { stop_reason: stopReasonOf(this.finishReason), stop_sequence: null }, usage: messageUsage(usage) }) +
      event('message_stop', {})
    );
  }

  fail(error: GatewayError): string {
    return event('error', withAnthropicError(error.toBody(), error.status) as unknown as Record<string, unknown>);
  }

  private start(block: Record<string, unknown>, opened: NonNullable<MessageStream['block']>): string {
    let frames = this.close();
    this.index += 1;
    this.block = opened;
    frames += event('content_block_start', { index: this.index, content_block: block });
    if (!this.pinged) {
      this.pinged = true;
      frames += event('ping', {});
    }
    return frames;
  }

  private close(): string {
    if (!this.block) return '';
    this.block = undefined;
    return event('content_block_stop', { index: this.index });
  }
}

function event(type: string, fields: Record<string, unknown>): string {
  return formatEvent(JSON.stringify({ type, ...fields }), { event: type });
}
