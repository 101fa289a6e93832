import { GatewayError } from '../../errors/gateway-error.js';
import type { ChatMessage } from '../../providers/provider-contract.js';
import type { ConversationRead, ResponseStore, StoredConversationTurn } from '../../store/store-contract.js';
import { outputAsMessages } from './chat-to-response.js';
import { newId } from './ids.js';
import type {
  ResponseObject,
  ResponsesInputItem,
  ResponsesItem,
  ResponsesRequest,
} from '../../wire/openai-responses.js';
import type { ToolNames } from './tool-names.js';

export interface HistoryLog {
  warn(fields: Record<string, unknown>, msg: string): void;
  info(fields: Record<string, unknown>, msg: string): void;
}

/**
 * What a turn counts against its caller's bound besides its texts: the rows, keys and ids every turn costs. So the
 * bound on bytes also bounds how many turns a caller keeps. SQLite migration 13 counts the rows it converts alike.
 */
export const TURN_OVERHEAD_BYTES = 512;

/** The bounds of stored conversations (config `responses:`, and the body limit), docs/responses.md. */
export interface HistoryBounds {
  ttlMs: number;
  /** The largest turn kept (its own texts). */
  maxStoredBytes: number;
  /** A conversation whose stored part is larger cannot be continued. */
  maxConversationBytes: number;
  /** A conversation of this many turns cannot be continued. */
  maxConversationTurns: number;
  /** What one caller keeps stored; past it, its least recently continued turns are evicted. */
  maxCallerBytes: number;
  /** The caller's body limit: the conversation continued and the request's own bytes together stay within it. */
  bodyLimitBytes: number;
}

/** The response a call continues (its `previous_response_id`): where the new turn goes on from. */
export interface PreviousTurn {
  id: string;
  depth: number;
  conversationBytes: number;
}

/** A stored conversation, ready to go on: its messages, and the turn it ends with. */
export interface Continuation {
  messages: ChatMessage[];
  previous: PreviousTurn;
}

/** A finished response to keep as a turn: its request, the turn it continues, its messages and its answer. */
export interface FinishedTurn {
  request: ResponsesRequest;
  previous: PreviousTurn | undefined;
  /** The request's own messages (not those of the turns it continues). */
  input: readonly ChatMessage[];
  response: ResponseObject;
  /** The response as its JSON text. */
  responseText: string;
  /** The names the request's tools have upstream, and back. */
  names?: ToolNames | undefined;
}

/**
 * Responses kept for `previous_response_id` and retrieval, in the state store (SQLite, or Redis shared by every
 * instance), per caller. Each stored turn holds only what its call added (its input and output) and the id of the
 * turn it continues; continuing reads the chain back (one store read, bounded in turns and bytes before any turn
 * is read). The instructions of a response are not carried into the next one (as in OpenAI's API: each request
 * states its own).
 */
export class ResponseHistory {
  constructor(private readonly options: { store: ResponseStore; bounds: HistoryBounds; log: HistoryLog }) {}

  /**
   * The conversation that ends with the caller's response `id`, for a request of `requestBytes`; undefined when
   * no such response is held. A 400 when it is past the conversation bounds, a 413 when it and the request would
   * go over the body limit, a 404 when an earlier turn of it is gone: all before any turn is read.
   */
  async continuation(caller: string, id: string, requestBytes: number): Promise<Continuation | undefined> {
    const { maxConversationBytes, maxConversationTurns, bodyLimitBytes } = this.options.bounds;
    const room = Math.max(0, Math.min(maxConversationBytes, bodyLimitBytes - requestBytes));
    const read = await this.read(() =>
      this.options.store.conversation(caller, id, { maxTurns: maxConversationTurns - 1, maxBytes: room }),
    );
    if (!read) return undefined;
    const { depth, conversationBytes } = read.head;
    const where = { previous_response_id: id.slice(0, 256) };
    if (depth >= maxConversationTurns) {
      throw new GatewayError('conversation_too_large', {
        ...where,
        limit: 'responses.max_conversation_turns',
        turns: depth,
        max_turns: maxConversationTurns,
      });
    }
    if (conversationBytes > maxConversationBytes) {
      throw new GatewayError('conversation_too_large', {
        ...where,
        limit: 'responses.max_conversation_bytes',
        conversation_bytes: conversationBytes,
        max_conversation_bytes: maxConversationBytes,
      });
    }
    if (!read.turns) {
      throw new GatewayError('payload_too_large', {
        ...where,
        limit_bytes: bodyLimitBytes,
        conversation_bytes: conversationBytes,
        body_bytes: requestBytes,
        problem: 'the stored conversation continued and this request together are larger than the body limit',
      });
    }
    const turns = this.whole(read, id);
    return {
      messages: turns.flatMap((turn) => JSON.parse(turn.messages) as ChatMessage[]),
      previous: { id, depth, conversationBytes },
    };
  }

  /** The stored response `id` (JSON text), for retrieval. */
  async response(caller: string, id: string): Promise<string> {
    const stored = await this.read(() => this.options.store.get(caller, id));
    if (!stored) throw notFound(id);
    return stored.response;
  }

  /**
   * The input items of the whole conversation that ends with `id`, oldest first: each earlier turn's input items
   * and output items, then its own input items (what OpenAI's `input_items` lists for a continued response).
   */
  async inputItems(caller: string, id: string): Promise<ResponsesItem[]> {
    const maxTurns = this.options.bounds.maxConversationTurns;
    const read = await this.read(() =>
      this.options.store.conversation(caller, id, { maxTurns, maxBytes: Number.MAX_SAFE_INTEGER }),
    );
    if (!read) throw notFound(id);
    if (!read.turns)
      throw new GatewayError('conversation_too_large', {
        id: id.slice(0, 256),
        limit: 'responses.max_conversation_turns',
        turns: read.head.depth,
        max_turns: maxTurns,
      });
    const turns = this.whole(read, id);
    const items: ResponsesItem[] = [];
    // The gateway's own texts (save): the items it stored and the response it wrote.
    turns.forEach((turn, i) => {
      items.push(...(JSON.parse(turn.inputItems) as ResponsesInputItem[]));
      if (i < turns.length - 1) items.push(...(JSON.parse(turn.response) as ResponseObject).output);
    });
    return items;
  }

  /** The turns of a conversation read whole; a 404 naming the missing turn when an earlier one is gone. */
  private whole(read: ConversationRead, id: string): StoredConversationTurn[] {
    const turns = read.turns ?? [];
    const missing = turns[0]?.parentId;
    if (turns.length === 0) throw notFound(id);
    if (missing !== undefined) {
      throw new GatewayError('response_not_found', {
        id: id.slice(0, 256),
        missing_id: missing.slice(0, 256),
        problem:
          'an earlier response of this conversation was deleted or evicted, so the conversation cannot be rebuilt',
      });
    }
    return turns;
  }

  private async read<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw new GatewayError('response_store_unavailable', {}, { cause: error });
    }
  }

  async delete(caller: string, id: string): Promise<void> {
    const deleted = await this.read(() => this.options.store.delete(caller, id));
    if (!deleted) throw notFound(id);
  }

  /**
   * Keeps a finished response as a turn: its input items, its own messages (`input` and the output) and the turn it
   * continues. Never fails the call it belongs to: a store failure or a turn over `maxStoredBytes` is logged, and
   * the response is simply not kept (a later `previous_response_id` to it is a 404).
   */
  async save(caller: string, { request, previous, input, response, responseText, names }: FinishedTurn): Promise<void> {
    const { bounds, log, store } = this.options;
    const inputItems = JSON.stringify(inputItemsOf(request.input));
    const messages = JSON.stringify([...input, ...outputAsMessages(response.output, names)]);
    const messagesBytes = Buffer.byteLength(messages);
    const texts = Buffer.byteLength(responseText) + Buffer.byteLength(inputItems) + messagesBytes;
    if (texts > bounds.maxStoredBytes) {
      log.warn(
        { response_id: response.id, bytes: texts, max_bytes: bounds.maxStoredBytes },
        'response not stored: over responses.max_stored_bytes',
      );
      return;
    }
    const turn: StoredConversationTurn = {
      response: responseText,
      inputItems,
      messages,
      parentId: previous?.id,
      depth: (previous?.depth ?? 0) + 1,
      conversationBytes: (previous?.conversationBytes ?? 0) + messagesBytes,
      bytes: texts + TURN_OVERHEAD_BYTES,
    };
    try {
      const evicted = await store.put(caller, response.id, turn, {
        ttlMs: bounds.ttlMs,
        maxCallerBytes: bounds.maxCallerBytes,
      });
      if (evicted > 0)
        log.info(
          { response_id: response.id, evicted, max_caller_bytes: bounds.maxCallerBytes },
          'stored responses evicted: the caller was over responses.max_caller_bytes',
        );
    } catch (error) {
      log.warn({ response_id: response.id, err: error }, 'response not stored: the store failed');
    }
  }
}

function notFound(id: string): GatewayError {
  return new GatewayError('response_not_found', { id: id.slice(0, 256) });
}

const ITEM_ID_PREFIX: Record<string, 'fc' | 'fco' | 'ctc' | 'ctco'> = {
  function_call: 'fc',
  function_call_output: 'fco',
  custom_tool_call: 'ctc',
  custom_tool_call_output: 'ctco',
};

/** The input as a list of items, each with an id (a string input is one user message), for `input_items`. */
export function inputItemsOf(input: ResponsesRequest['input']): ResponsesInputItem[] {
  if (typeof input === 'string')
    return [{ type: 'message', id: newId('msg'), role: 'user', content: [{ type: 'input_text', text: input }] }];
  return input.map((item) => {
    const type = item.type ?? 'message';
    const id = typeof item.id === 'string' ? item.id : newId(ITEM_ID_PREFIX[type] ?? 'msg');
    if (type !== 'message') return { ...item, id };
    const content = typeof item.content === 'string' ? [{ type: 'input_text', text: item.content }] : item.content;
    return { type: 'message', id, role: item.role, content };
  });
}
