import { GatewayError } from '../../errors/gateway-error.js';
import type { ChatMessage } from '../../providers/contract.js';
import type { ResponseStore, StoredConversationTurn } from '../../store/contract.js';
import { outputAsMessages } from './chat-to-response.js';
import { newId } from './ids.js';
import type { ResponseObject, ResponsesRequest } from './responses-types.js';

export interface HistoryLog {
  warn(fields: Record<string, unknown>, msg: string): void;
}

/** What one stored turn holds once read back. */
export interface StoredTurn {
  response: ResponseObject;
  inputItems: Array<Record<string, unknown>>;
  conversation: ChatMessage[];
}

/**
 * Responses kept for `previous_response_id` and retrieval, in the state store (SQLite, or Redis shared by every
 * instance), per caller and for `ttlMs`. Each stored turn holds the whole conversation up to it (as chat
 * messages), so continuing one is one read whatever its length; the bound is `maxBytes` per turn. The
 * instructions of a response are not carried into the next one (as in OpenAI's API: each request states its
 * own).
 */
export class ResponseHistory {
  constructor(
    private readonly options: { store: ResponseStore; ttlMs: number; maxBytes: number; log: HistoryLog },
  ) {}

  /** The conversation that ends with the caller's response `id`, as chat messages; undefined when none is held. */
  async find(caller: string, id: string): Promise<ChatMessage[] | undefined> {
    const stored = await this.read(caller, id);
    return stored ? (JSON.parse(stored.conversation) as ChatMessage[]) : undefined;
  }

  async turn(caller: string, id: string): Promise<StoredTurn> {
    const stored = await this.read(caller, id);
    if (!stored) throw new GatewayError('response_not_found', { id: id.slice(0, 256) });
    return {
      response: JSON.parse(stored.response) as ResponseObject,
      inputItems: JSON.parse(stored.inputItems) as Array<Record<string, unknown>>,
      conversation: JSON.parse(stored.conversation) as ChatMessage[],
    };
  }

  private async read(caller: string, id: string): Promise<StoredConversationTurn | undefined> {
    try {
      return await this.options.store.get(caller, id);
    } catch (error) {
      throw new GatewayError('response_store_unavailable', {}, { cause: error });
    }
  }

  async delete(caller: string, id: string): Promise<void> {
    let deleted: boolean;
    try {
      deleted = await this.options.store.delete(caller, id);
    } catch (error) {
      throw new GatewayError('response_store_unavailable', {}, { cause: error });
    }
    if (!deleted) throw new GatewayError('response_not_found', { id: id.slice(0, 256) });
  }

  /**
   * Keeps a finished response. Never fails the call it belongs to: a store failure or a turn over the size bound
   * is logged, and the response is simply not kept (a later `previous_response_id` to it is a 404).
   */
  async save(caller: string, request: ResponsesRequest, conversationBefore: readonly ChatMessage[], response: ResponseObject, responseText: string): Promise<void> {
    const turn: StoredConversationTurn = {
      response: responseText,
      inputItems: JSON.stringify(inputItemsOf(request.input)),
      conversation: JSON.stringify([...conversationBefore, ...outputAsMessages(response.output)]),
    };
    const bytes = turn.response.length + turn.inputItems.length + turn.conversation.length;
    if (bytes > this.options.maxBytes) {
      this.options.log.warn({ response_id: response.id, chars: bytes, max_bytes: this.options.maxBytes }, 'response not stored: over responses.max_stored_bytes');
      return;
    }
    try {
      await this.options.store.put(caller, response.id, turn, this.options.ttlMs);
    } catch (error) {
      this.options.log.warn({ response_id: response.id, err: error }, 'response not stored: the store failed');
    }
  }
}

/** The input as a list of items, each with an id (a string input is one user message), for `input_items`. */
export function inputItemsOf(input: ResponsesRequest['input']): Array<Record<string, unknown>> {
  if (typeof input === 'string') return [{ type: 'message', id: newId('msg'), role: 'user', content: [{ type: 'input_text', text: input }] }];
  return input.map((item) => {
    const type = item.type ?? 'message';
    const id = typeof item.id === 'string' ? item.id : newId(type === 'function_call' ? 'fc' : type === 'function_call_output' ? 'fco' : 'msg');
    if (type !== 'message') return { ...item, id };
    const content = typeof item.content === 'string' ? [{ type: 'input_text', text: item.content }] : item.content;
    return { type: 'message', id, role: item.role, content };
  });
}
