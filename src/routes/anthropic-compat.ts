import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import { GatewayError } from '../errors/gateway-error.js';
import { ANTHROPIC_MESSAGES_PATH, anthropicAuthorization } from '../http/anthropic-shape.js';
import { countTokensBodySchema, messagesBodySchema } from '../surfaces/messages/messages-schema.js';

const COUNT_TOKENS_PATH = `${ANTHROPIC_MESSAGES_PATH}/count_tokens`;

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/**
 * The drop-in path of Anthropic's API: `POST /v1/messages`, the same as `?route=messages`. Credentials as Anthropic
 * clients send them: `x-api-key: <key>` (the SDKs, Claude Code with ANTHROPIC_API_KEY) or `Authorization: Bearer
 * <key>` (Claude Code with ANTHROPIC_AUTH_TOKEN); any of the gateway's credentials (admin token, scoped key with
 * the `messages` right, OAuth). Errors carry Anthropic's `{type: "error", error}` beside ours, and every answer a
 * `request-id` header, which the SDKs quote.
 */
export function mountAnthropicCompat(app: FastifyInstance, auth: Authenticator, handlers: { messages: Handler; countTokens: Handler }): void {
  const guard = async function anthropicGuard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    request.errorShape = 'anthropic';
    request.routeName = request.url.startsWith(COUNT_TOKENS_PATH) ? 'count_tokens' : 'messages';
    void reply.header('request-id', request.id);
    const principal = await auth.authenticate(anthropicAuthorization(request.headers), 'messages', request.protocol === 'https');
    request.caller = principal.caller;
    request.principal = principal;
  };
  app.post(ANTHROPIC_MESSAGES_PATH, { onRequest: guard, schema: { body: messagesBodySchema } }, handlers.messages);
  app.post(COUNT_TOKENS_PATH, { onRequest: guard, schema: { body: countTokensBodySchema() } }, handlers.countTokens);
  app.route({
    method: ['GET', 'PUT', 'PATCH', 'DELETE'],
    url: ANTHROPIC_MESSAGES_PATH,
    handler: async (request) => {
      throw new GatewayError('method_not_allowed', { method: request.method, allowed: ['POST'] }, { headers: { allow: 'POST' } });
    },
  });
}
