import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import type { RateLimitService } from '../core/limits/rate-limit-service.js';
import type { GrantableRoute } from '../names/api-names.js';
import { OPENAI_ERRORS } from '../http/openai-shape.js';

/**
 * The `onRequest` guard of an OpenAI path that calls no model (files, uploads, vector stores): OpenAI's error
 * shape, the route's right, and the caller's requests-per-window limit (a request with no tokens, like a cached
 * answer), its RateLimit headers on the answer. The route name is what the request is recorded and limited as.
 */
export function requestsOnlyGuard(
  auth: Authenticator,
  limits: RateLimitService,
  route: GrantableRoute,
): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  return async function requestsOnly(request, reply) {
    request.errorShape = OPENAI_ERRORS;
    request.routeName = route;
    const principal = await auth.authenticate(request.headers.authorization, route, request.protocol === 'https');
    request.caller = principal.caller;
    request.principal = principal;
    const admission = await limits.admit({
      caller: principal.caller,
      model: '',
      upstream: '',
      estimatedTokens: { prompt: 0, maxTokens: 0 },
      requestId: request.id,
      leaseMs: 60_000,
      requestsOnly: true,
      ...(principal.limits ? { callerLimits: principal.limits } : {}),
    });
    reply.headers(admission.headers);
  };
}
