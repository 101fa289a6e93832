import { randomUUID } from 'node:crypto';
import type { CallInput } from '../../core/pipeline/model-call.js';
import type {
  ChatCompletionChunk,
  ChatMessage,
  ChatRequestBody,
  ToolCall,
  Usage,
} from '../../providers/provider-contract.js';
import type { SearchRun } from './passages.js';

/** A search the stream shows as it happens: its item opens (`started`) and closes with its results (`done`). */
export interface SearchEvent {
  kind: 'started' | 'done';
  run: SearchRun;
}

/** What a streamed loop (search-stream.ts) asks of the loop that runs the searches (search-loop.ts). */
export interface SearchTurns {
  readonly searchesLeft: number;
  /** The usage the upstreams reported for the turns before the last one of a stream. */
  earlierUsage: Usage | undefined;
  turnBody(body: ChatRequestBody, messages: ChatMessage[], turn: number): ChatRequestBody;
  answerCall(call: ToolCall, id?: string): Promise<{ message: ChatMessage; run?: SearchRun }>;
  eventChunk(event: SearchEvent): ChatCompletionChunk;
}

/** A `file_search_call` item's id, in OpenAI's form. */
export function newSearchId(): string {
  return `fs_${randomUUID().replaceAll('-', '')}`;
}

/**
 * A turn's call input: the request's, with the turn's own lease id after the first (a lease is keyed by it), and
 * never the caller's raw bytes (the body is the loop's).
 */
export function turnInput(input: CallInput, turn: number): CallInput {
  return { ...input, rawBody: undefined, requestId: turn === 0 ? input.requestId : `${input.requestId}.${turn}` };
}
