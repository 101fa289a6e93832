import type { FastifyReply, FastifyRequest } from 'fastify';
import { ADMIN, authorizeModel } from '../auth/principal.js';
import type { ChatService } from '../core/chat-service.js';
import type { TokenCountService } from '../core/token-count-service.js';
import { messagesToChat, type MessagesRequest } from '../surfaces/messages/request-to-chat.js';
import { callInputOf, pickHeaders, pickQuery, watchClient } from './model-call.js';
import { ANTHROPIC_FORWARDED_HEADERS, ANTHROPIC_FORWARDED_QUERY } from '../surfaces/messages/messages-surface.js';

/**
 * POST /v1/messages/count_tokens: `{input_tokens}` of a Messages request. A model served by Anthropic is counted by
 * Anthropic (its count is what it bills); any other is counted by the gateway, without an upstream call, on the
 * request as it would be translated: OpenAI families with their tokenizer (on its own thread: core/token-counter.ts),
 * others by the documented estimate.
 */
export function makeCountTokensHandler(tokens: TokenCountService, chat: ChatService) {
  return async function handleCountTokens(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const body = request.body as MessagesRequest;
    authorizeModel(request.principal ?? ADMIN, body.model, chat.canonicalModel(body.model));
    if (tokens.countedUpstream(body.model)) {
      const call = callInputOf(request, reply, request.rawBody);
      const forwardHeaders = pickHeaders(request, ANTHROPIC_FORWARDED_HEADERS);
      const forwardQuery = pickQuery(request, ANTHROPIC_FORWARDED_QUERY);
      const counted = await tokens.countUpstream(body, { ...call, ...(forwardHeaders ? { forwardHeaders } : {}), ...(forwardQuery ? { forwardQuery } : {}) });
      return reply.type(request.responseType).send({ input_tokens: counted });
    }
    const translated = messagesToChat({ ...body, max_tokens: 1 });
    const counted = await tokens.countLocally(translated, watchClient(reply));
    return reply.type(request.responseType).send({ input_tokens: counted });
  };
}
