import type { FastifyInstance } from 'fastify';
import type { OAuthVerifier } from '../auth/oauth.js';
import { GatewayError } from '../errors/gateway-error.js';
import { MCP_PATH, PROTECTED_RESOURCE_PATH, protectedResourceMetadata } from '../http/mcp-authorization.js';

/**
 * `GET /.well-known/oauth-protected-resource` and `.../mcp` (RFC 9728, no authentication: an MCP client reads it
 * before it has a token): the gateway's `/mcp` as a protected resource and the configured issuer as its
 * authorization server. A 404 in the gateway's error shape while no issuer is configured (`auth.oauth`); read at each
 * request, so a live reload that adds or removes the issuer is followed at once.
 */
export function mountProtectedResourceMetadata(app: FastifyInstance, oauth: () => OAuthVerifier | undefined): void {
  for (const url of [PROTECTED_RESOURCE_PATH, `${PROTECTED_RESOURCE_PATH}${MCP_PATH}`]) {
    app.get(url, async (request, reply) => {
      request.routeName = 'oauth_protected_resource';
      const verifier = oauth();
      if (!verifier)
        throw new GatewayError('not_found', {
          path: url,
          problem: 'this gateway has no OAuth issuer configured (auth.oauth): use a key or the admin token',
        });
      // Public and the same for every caller of one origin; short-lived, so a changed issuer is seen soon.
      return reply
        .header('cache-control', 'public, max-age=300')
        .type('application/json')
        .send(protectedResourceMetadata(request, verifier));
    });
  }
}
