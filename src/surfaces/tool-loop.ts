import type { CompletedChat, StartedStream } from '../core/pipeline/chat-service.js';
import type { CallInput } from '../core/pipeline/model-call.js';
import type { ChatRequestBody } from '../providers/provider-contract.js';

/** What one model turn is asked of: the chat service (core/pipeline/chat-service.ts), each turn a call of its own. */
export interface ChatTurns {
  complete(body: ChatRequestBody, input: CallInput): Promise<CompletedChat>;
  stream(body: ChatRequestBody, input: CallInput): Promise<StartedStream>;
}

/**
 * A request answered in several model turns, with a tool the gateway runs between them (file_search:
 * surfaces/file-search/search-loop.ts). Each turn goes through the pipeline as a call of its own (plan, limits and
 * budgets, retries and fallbacks, settle); the answer is the last turn's, its usage that of every turn.
 */
export interface ToolLoop {
  complete(chat: ChatTurns, body: ChatRequestBody, input: CallInput): Promise<CompletedChat>;
  stream(chat: ChatTurns, body: ChatRequestBody, input: CallInput): Promise<StartedStream>;
}
