import type { CompletedChat, StartedStream } from '../../core/pipeline/chat-service.js';
import type { CallInput } from '../../core/pipeline/model-call.js';
import type {
  ChatCompletionChunk,
  ChatMessage,
  ChatRequestBody,
  ToolCall,
  Usage,
} from '../../providers/provider-contract.js';
import type { ChatTurns, ToolLoop } from '../tool-loop.js';
import { LoopEvents, type GatewayTurns } from './gateway-turns.js';
import { loopComplete } from './loop-complete.js';
import { loopStream } from './loop-stream.js';

/**
 * A tool the gateway runs between model turns (file_search, MCP tools), as the route runs it (ToolLoop): its turns
 * go through the shared drivers (loop-complete.ts, loop-stream.ts); what it does between them is its own (the
 * abstract GatewayTurns methods), each event of a stream an internal chunk of its own (`E`, read back by `eventOf`).
 */
export abstract class GatewayToolLoop<E> implements ToolLoop, GatewayTurns {
  /** The usage the upstreams reported for the turns before the last one of a stream (loop-stream.ts adds them). */
  earlierUsage: Usage | undefined;
  /** The events of a stream, by the (internal) chunk that carries each to the surface's encoder. */
  protected readonly events = new LoopEvents<E>();

  complete(chat: ChatTurns, body: ChatRequestBody, input: CallInput): Promise<CompletedChat> {
    return loopComplete(this, chat, body, input);
  }

  stream(chat: ChatTurns, body: ChatRequestBody, input: CallInput): Promise<StartedStream> {
    return loopStream(this, chat, body, input);
  }

  /** The event an internal chunk of this loop's stream carries (undefined: an upstream's chunk). */
  eventOf(chunk: ChatCompletionChunk): E | undefined {
    return this.events.of(chunk);
  }

  abstract runs(name: string): boolean;
  abstract goesOn(calls: readonly ToolCall[], callsTheirs: boolean): boolean;
  abstract turnBody(body: ChatRequestBody, messages: ChatMessage[], turn: number): ChatRequestBody;
  abstract answerCalls(calls: readonly ToolCall[]): AsyncGenerator<ChatCompletionChunk, ChatMessage[], undefined>;
}
