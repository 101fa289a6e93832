import { GatewayError } from '../../errors/gateway-error.js';
import { formatEvent } from '../../http/sse.js';
import type { StreamChunk, Usage } from '../../providers/provider-contract.js';
import type { StreamEncoder } from '../surface.js';
import { toolCallFields } from '../tool-arguments.js';
import { responseUsage } from './chat-to-response.js';
import { newId, outputItemId } from './ids.js';
import { settle } from './response-object.js';
import { callItem, finishCall, type CallItem } from './output-calls.js';
import {
  endingOf,
  type MessageItem,
  type OutputItem,
  type OutputText,
  type ResponseObject,
  type ResponseStreamEvents,
} from '../../wire/openai-responses.js';
import type { ToolNames } from './tool-names.js';
import { MessageCitations, streamSearchEvent, type EmitEvent, type ResponsesFileSearch } from './file-search-output.js';
import { sumUsage } from '../tool-turns/usage-sum.js';
import type { McpToolLoop } from '../mcp-tools/mcp-loop.js';
import { streamMcpEvent, streamMcpOpening } from './mcp-output.js';

/**
 * The most answer text (and tool-call argument text) one streamed response keeps for its closing events, which
 * repeat the whole output (`response.output_text.done`, `response.completed`). Past it the stream fails with a
 * clear error rather than holding an endless answer in memory (the same bound as a JSON answer's body).
 */
export const MAX_STREAMED_OUTPUT_CHARS = 32 * 1024 * 1024;

interface OpenMessage {
  item: MessageItem;
  index: number;
  text: string;
  /** Its citations, when the gateway runs a file search for the response (its markers leave the text). */
  citations: MessageCitations | undefined;
}

interface OpenCall {
  item: CallItem;
  index: number;
  chatIndex: number;
  /** The chat arguments so far (a function call's are streamed as they come; a custom call's input is read at its end). */
  args: string;
}

/**
 * One Responses event stream, from chat chunks: a state machine per stream. Output items open in the order their
 * first delta arrives (text: a `message` item; each tool call: a `function_call` item, or a `custom_tool_call` for
 * a freeform tool, named as the caller's tools are: output-calls.ts) and close when another
 * item starts or the stream ends, each with its `.added`/`.delta`/`.done` events; every event carries the next
 * `sequence_number`. A stream that ended well closes with `response.completed` (or `response.incomplete` for a
 * length or content-filter stop), one that failed with `response.failed` — never a fake completion, and no
 * `[DONE]`. `onEnd` sees the final response (to store it) before its closing event is written.
 *
 * Events are gathered in `pending` and handed out by each call: when translating a chunk throws half-way (a
 * function call's arguments that are not a JSON object, the output bound), the events it had already produced
 * still go out, ahead of `response.failed`, so the caller's sequence has no gap.
 */
export class ResponseStream implements StreamEncoder {
  private sequence = 0;
  private readonly output: OutputItem[] = [];
  private message: OpenMessage | undefined;
  private call: OpenCall | undefined;
  private finishReason: string | null = null;
  private kept = 0;
  private pending = '';

  constructor(
    private readonly shell: ResponseObject,
    private readonly onEnd?: (response: ResponseObject) => Promise<void>,
    private readonly names?: ToolNames,
    /** The file search the gateway runs for the response: its searches' items and the answer's citations. */
    private readonly search?: ResponsesFileSearch,
    /** The MCP tools the gateway runs for the response: their listings, calls and approval requests as items. */
    private readonly mcp?: McpToolLoop,
  ) {}

  open(model?: string): string {
    if (model !== undefined) this.shell.model = model; // the upstream's, as in the JSON answer (chat-to-response.ts)
    this.event('response.created', { response: this.shell });
    this.event('response.in_progress', { response: this.shell });
    if (this.mcp) streamMcpOpening(this.mcp, this.shell.id, this.output, this.emit);
    return this.take();
  }

  chunk(item: StreamChunk): string {
    const searched = this.search?.loop.eventOf(item.chunk);
    if (searched && this.search) {
      this.closeMessage(false);
      this.closeCall(false);
      streamSearchEvent(searched, this.search, this.output, this.emit);
      return this.take();
    }
    const mcpEvent = this.mcp?.eventOf(item.chunk);
    if (mcpEvent) {
      this.closeMessage(false);
      this.closeCall(false);
      streamMcpEvent(mcpEvent, this.output, this.emit);
      return this.take();
    }
    const choice = item.chunk.choices[0];
    if (item.internal === true || !choice) return '';
    const delta = choice.delta;
    if (typeof delta.content === 'string' && delta.content !== '') this.text(delta.content);
    if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) this.toolCall(call);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    return this.take();
  }

  async end(usage: Usage | undefined): Promise<string> {
    const ending = endingOf(this.finishReason);
    this.closeMessage(ending.status === 'incomplete');
    this.closeCall(ending.status === 'incomplete');
    // A tool loop's earlier turns count too (surfaces/tool-turns/loop-stream.ts).
    const loop = this.search?.loop ?? this.mcp;
    const all = loop ? sumUsage([loop.earlierUsage, usage]) : usage;
    const response = settle(
      { ...this.shell, ...ending, output: this.output, usage: responseUsage(all) },
      ending.status,
    );
    await this.onEnd?.(response);
    this.event(ending.status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
    return this.take();
  }

  fail(error: GatewayError): string {
    for (const item of this.output)
      if (item.type !== 'mcp_list_tools' && item.type !== 'mcp_approval_request' && item.status === 'in_progress')
        item.status = 'incomplete';
    const response: ResponseObject = {
      ...this.shell,
      status: 'failed',
      output: this.output,
      error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) },
    };
    this.event('response.failed', { response });
    return this.take();
  }

  private text(delta: string): void {
    this.closeCall(false);
    if (!this.message) {
      const item: MessageItem = {
        type: 'message',
        id: outputItemId(this.shell.id, 'msg', this.output.length),
        status: 'in_progress',
        role: 'assistant',
        content: [],
      };
      const passages = this.search?.loop.passages;
      const citations =
        passages && new MessageCitations(passages, { item_id: item.id, output_index: this.output.length });
      this.message = { item, index: this.output.length, text: '', citations };
      this.output.push(item);
      const part: OutputText = { type: 'output_text', text: '', annotations: [], logprobs: [] };
      this.event('response.output_item.added', { output_index: this.message.index, item });
      this.event('response.content_part.added', {
        item_id: item.id,
        output_index: this.message.index,
        content_index: 0,
        part,
      });
    }
    if (this.message.citations) this.message.citations.push(delta, this.textDelta, this.emit);
    else this.textDelta(delta);
  }

  /** One `output_text.delta` of the open message (its text without citation markers). */
  private readonly textDelta = (delta: string): void => {
    const message = this.message as OpenMessage;
    this.keep(delta.length);
    message.text += delta;
    this.event('response.output_text.delta', {
      item_id: message.item.id,
      output_index: message.index,
      content_index: 0,
      delta,
      logprobs: [],
    });
  };

  private readonly emit: EmitEvent = (type, fields) => this.event(type, fields);

  private toolCall(piece: unknown): void {
    const delta = toolCallFields(piece);
    if (!delta) return;
    const chatIndex = delta.index ?? 0;
    if (!this.call || this.call.chatIndex !== chatIndex) {
      this.closeMessage(false);
      this.closeCall(false);
      const item = callItem(this.names, delta.name ?? '', delta.id ?? newId('fc'), 'in_progress', {
        responseId: this.shell.id,
        index: this.output.length,
      });
      this.call = { item, index: this.output.length, chatIndex, args: '' };
      this.output.push(item);
      this.event('response.output_item.added', { output_index: this.call.index, item: { ...item } });
    }
    const args = delta.arguments;
    if (args !== undefined && args !== '') {
      this.keep(args.length);
      this.call.args += args;
      if (this.call.item.type === 'function_call') {
        this.call.item.arguments = this.call.args;
        this.event('response.function_call_arguments.delta', {
          item_id: this.call.item.id,
          output_index: this.call.index,
          delta: args,
        });
      }
    }
  }

  private closeMessage(incomplete: boolean): void {
    const open = this.message;
    if (!open) return;
    open.citations?.end(this.textDelta, this.emit);
    this.message = undefined;
    const { item, index, text } = open;
    const annotations = open.citations?.annotations ?? [];
    const part: OutputText = { type: 'output_text', text, annotations, logprobs: [] };
    item.content = [part];
    item.status = incomplete ? 'incomplete' : 'completed';
    this.event('response.output_text.done', {
      item_id: item.id,
      output_index: index,
      content_index: 0,
      text,
      logprobs: [],
    });
    this.event('response.content_part.done', { item_id: item.id, output_index: index, content_index: 0, part });
    this.event('response.output_item.done', { output_index: index, item });
  }

  /**
   * Closes the open call; one that finished (not cut short) must hold a JSON object (a custom call: its string
   * input), or the stream fails here. A custom call's input goes out whole, as one delta and its `.done`.
   */
  private closeCall(incomplete: boolean): void {
    const open = this.call;
    if (!open) return;
    const { item, index, args } = open;
    finishCall(item, args, incomplete);
    this.call = undefined;
    item.status = incomplete ? 'incomplete' : 'completed';
    if (item.type === 'function_call') {
      this.event('response.function_call_arguments.done', {
        item_id: item.id,
        output_index: index,
        name: item.name,
        arguments: item.arguments,
      });
    } else {
      if (item.input !== '')
        this.event('response.custom_tool_call_input.delta', {
          item_id: item.id,
          output_index: index,
          delta: item.input,
        });
      this.event('response.custom_tool_call_input.done', { item_id: item.id, output_index: index, input: item.input });
    }
    this.event('response.output_item.done', { output_index: index, item });
  }

  /** Counts what the closing events will repeat; an answer past the bound ends the stream with an error. */
  private keep(chars: number): void {
    this.kept += chars;
    if (this.kept > MAX_STREAMED_OUTPUT_CHARS) {
      throw new GatewayError('upstream_invalid_response', {
        reason: `the streamed answer exceeds ${MAX_STREAMED_OUTPUT_CHARS} characters`,
      });
    }
  }

  private event<T extends keyof ResponseStreamEvents>(type: T, fields: ResponseStreamEvents[T]): void {
    this.pending += formatEvent(JSON.stringify({ type, sequence_number: this.sequence++, ...fields }), { event: type });
  }

  /** The events produced since the last call, handed out once. */
  private take(): string {
    const frames = this.pending;
    this.pending = '';
    return frames;
  }
}
