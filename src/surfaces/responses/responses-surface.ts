import { GatewayError } from '../../errors/gateway-error.js';
import type { ChatMessage } from '../../providers/contract.js';
import type { ApiSurface, SurfaceCall } from '../surface.js';
import { completionToResponse, responseShell } from './chat-to-response.js';
import { newId } from './ids.js';
import { responsesToChat } from './request-to-chat.js';
import { ResponseStream } from './response-stream.js';
import type { ResponseObject, ResponsesRequest } from './responses-types.js';

/** What one Responses call keeps between its translation and its answer. */
interface ResponsesCallState {
  shell: ResponseObject;
  /** The chat messages the call sent (its conversation so far), for the stored response. */
  messages: ChatMessage[];
}

/** Where responses are kept for `previous_response_id` and `GET /v1/responses/{id}` (absent: nothing is kept). */
export interface ResponseHistory {
  /** The conversation (as chat messages) that ends with the caller's response `id`; 404 when it has none such. */
  conversation(caller: string, id: string): Promise<ChatMessage[]>;
  save(caller: string, response: ResponseObject, messages: ChatMessage[]): Promise<void>;
}

/**
 * The OpenAI Responses API as a surface of the chat pipeline: a Responses request is translated into a chat
 * request for any provider, and the chat answer back into a `response` object or the typed event stream.
 */
export function responsesSurface(history: ResponseHistory | undefined): ApiSurface {
  return {
    route: 'responses',
    forwardsRawBody: false,
    async toChat(body, call) {
      const request = body as ResponsesRequest;
      const previous = typeof request.previous_response_id === 'string' ? request.previous_response_id : undefined;
      if (previous !== undefined && !history) {
        throw new GatewayError('capability_not_supported', { field: 'previous_response_id', problem: 'this gateway keeps no responses (responses.store is off)' });
      }
      const earlier = previous !== undefined && history ? await history.conversation(call.caller, previous) : [];
      const chat = responsesToChat(request, earlier);
      const state: ResponsesCallState = { shell: responseShell(request, newId('resp'), Math.floor(Date.now() / 1000)), messages: chat.messages };
      call.state = state;
      return chat;
    },
    async answer(completion, call) {
      const state = call.state as ResponsesCallState;
      const response = completionToResponse(completion.toString('utf8'), state.shell);
      await save(history, call, state, response);
      return JSON.stringify(response);
    },
    encoder(call) {
      const state = call.state as ResponsesCallState;
      return new ResponseStream(state.shell, (response) => save(history, call, state, response));
    },
    // A data line is one JSON object (it ends with `}`), so only an event line can end with these names.
    isCompleteEnd: (frame) => frame.includes('event: response.completed\n') || frame.includes('event: response.incomplete\n'),
  };
}

async function save(history: ResponseHistory | undefined, call: SurfaceCall, state: ResponsesCallState, response: ResponseObject): Promise<void> {
  if (!history || !response.store) return;
  await history.save(call.caller, response, state.messages);
}
