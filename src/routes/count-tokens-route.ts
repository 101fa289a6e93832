import type { FastifyReply, FastifyRequest } from 'fastify';
import { ADMIN, authorizeModel } from '../auth/principal.js';
import type { ChatService } from '../core/pipeline/chat-service.js';
import type { TokenCountService } from '../core/pipeline/token-count-service.js';
import type { NativeBody } from '../providers/provider-contract.js';
import type { SurfaceDescriptor, TokenCountSpec } from '../surfaces/descriptor.js';
import type { ApiSurface } from '../surfaces/surface.js';
import { callInputOf, pickHeaders, pickQuery, watchClient } from './model-call-http.js';

/**
 * A surface's token count (POST /v1/messages/count_tokens: `{input_tokens}` of a Messages request). A model with an
 * upstream that speaks the surface's native API is counted there (its count is what it bills); any other is counted
 * by the gateway, without an upstream call, on the request as it would be translated (`spec.toChat`): OpenAI
 * families with their tokenizer (on its own thread: core/tokens/token-counter.ts), others by the documented estimate.
 */
export function makeCountTokensHandler(
  tokens: TokenCountService,
  chat: ChatService,
  descriptor: SurfaceDescriptor,
  spec: TokenCountSpec,
  surface: ApiSurface,
) {
  const api = descriptor.native?.api;
  return async function handleCountTokens(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const model = descriptor.modelOf(request);
    authorizeModel(request.principal ?? ADMIN, model, chat.canonicalModel(model));
    if (api !== undefined && tokens.countedUpstream(api, model)) {
      const call = callInputOf(request, reply, request.rawBody);
      const forwardHeaders = pickHeaders(request, surface.nativeHeaders);
      const forwardQuery = pickQuery(request, surface.nativeQuery);
      // The model as the descriptor read it: a surface whose model is in its path (Gemini) has none in the body.
      const body = request.body as NativeBody;
      const counted = await tokens.countUpstream(api, body.model === model ? body : { ...body, model }, {
        ...call,
        ...(forwardHeaders ? { forwardHeaders } : {}),
        ...(forwardQuery ? { forwardQuery } : {}),
      });
      return reply.type(request.responseType).send(spec.answer(counted));
    }
    const counted = await tokens.countLocally(spec.toChat(request), watchClient(reply));
    return reply.type(request.responseType).send(spec.answer(counted));
  };
}
