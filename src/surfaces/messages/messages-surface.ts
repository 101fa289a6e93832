import { randomUUID } from 'node:crypto';
import type { ApiSurface } from '../surface.js';
import { completionToMessage } from './chat-to-message.js';
import { MessageStream } from './message-stream.js';
import { messagesToChat, type MessagesRequest } from './request-to-chat.js';

interface MessagesCallState {
  id: string;
  model: string;
}

/**
 * Anthropic's Messages API as a surface of the chat pipeline: a Messages request is translated into a chat
 * request for any provider, and the chat answer back into a Messages object or Anthropic's event stream.
 */
export function messagesSurface(): ApiSurface {
  return {
    route: 'messages',
    forwardsRawBody: false,
    toChat(body, call) {
      const request = body as MessagesRequest;
      call.state = { id: `msg_${randomUUID().replaceAll('-', '')}`, model: request.model } satisfies MessagesCallState;
      return messagesToChat(request);
    },
    answer(completion, call) {
      const state = call.state as MessagesCallState;
      return JSON.stringify(completionToMessage(completion.toString('utf8'), state.id, state.model));
    },
    encoder(call) {
      const state = call.state as MessagesCallState;
      return new MessageStream(state.id, state.model);
    },
    // A data line is one JSON object (it ends with `}`), so only an event line can end with this name.
    isCompleteEnd: (frame) => frame.includes('event: message_stop\n'),
  };
}
