import type { FastifyRequest } from 'fastify';
import type { OAuthVerifier } from '../auth/oauth.js';
import { GatewayError } from '../errors/gateway-error.js';
import { publicOrigin } from './public-origin.js';

/**
 * The gateway as an OAuth 2.1 resource server for MCP clients (MCP specification, "Authorization"): a client that
 * gets a 401 from `/mcp` reads `resource_metadata` from its `WWW-Authenticate` (RFC 9728 section 5.1), fetches that
 * document, and finds there the authorization server to get a token from (`authorization_servers`, the configured
 * issuer). The token's audience is checked by the verifier (`auth.oauth.audience`, src/auth/oauth.ts).
 */

/** Where the gateway's one MCP server lives (`/mcp/<server>` below it: one server each). */
export const MCP_PATH = '/mcp';

/** RFC 9728 section 3: the well-known path, with the resource's own path appended after it. */
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';

/** RFC 9728 section 2: what an MCP client reads to find the authorization server for `<origin>/mcp`. */
export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  bearer_methods_supported: string[];
  scopes_supported: string[];
  resource_name: string;
}

/** The metadata URL of `resourcePath` (`/mcp` → `<origin>/.well-known/oauth-protected-resource/mcp`). */
export function resourceMetadataUrl(request: FastifyRequest, resourcePath: string = MCP_PATH): string {
  return `${publicOrigin(request)}${PROTECTED_RESOURCE_PATH}${resourcePath}`;
}

/**
 * The document for `resourcePath`, naming the configured issuer and the scopes that grant the `mcp` route. The
 * resource is the MCP endpoint's URL: the value a client sends as its RFC 8707 `resource` parameter, and whose path
 * is a prefix of `/mcp/<server>` too (the MCP SDK's client accepts a resource whose path is a prefix of the one it
 * calls, so the one document serves every endpoint below `/mcp`).
 */
export function protectedResourceMetadata(
  request: FastifyRequest,
  oauth: OAuthVerifier,
  resourcePath: string = MCP_PATH,
): ProtectedResourceMetadata {
  return {
    resource: `${publicOrigin(request)}${resourcePath}`,
    authorization_servers: [oauth.issuer],
    bearer_methods_supported: ['header'],
    scopes_supported: oauth.scopesGranting('mcp'),
    resource_name: 'LLM gateway MCP tools',
  };
}

/**
 * What the `/mcp` route answers when authentication or the `mcp` right fails: the same error, its Bearer challenge
 * pointing at the protected-resource metadata when an OAuth issuer is configured (MCP authorization: a 401 MUST
 * carry `WWW-Authenticate` with `resource_metadata`). A 403 for a token without the `mcp` route says
 * `insufficient_scope` and the scopes that would grant it (RFC 6750 section 3.1), so a client can ask for them. Other
 * errors, a Basic challenge, and every error of a gateway without OAuth pass unchanged.
 *
 * @example
 *   try { principal = await auth.authenticate(request.headers.authorization, 'mcp'); }
 *   catch (error) { throw isGatewayError(error) ? mcpUnauthorized(request, error, auth.oauth) : error; }
 */
export function mcpUnauthorized(
  request: FastifyRequest,
  error: GatewayError,
  oauth: OAuthVerifier | undefined,
  resourcePath: string = MCP_PATH,
): GatewayError {
  if (!oauth) return error;
  const metadata = `resource_metadata="${resourceMetadataUrl(request, resourcePath)}"`;
  let challenge: string | undefined;
  if (error.status === 401) {
    const current = error.headers?.['www-authenticate'] ?? 'Bearer realm="llm-gateway"';
    if (!/^bearer\b/i.test(current)) return error;
    challenge = `${current}, ${metadata}`;
  } else if (error.code === 'route_not_allowed') {
    const scopes = oauth.scopesGranting('mcp');
    challenge = `Bearer realm="llm-gateway", error="insufficient_scope"${scopes.length > 0 ? `, scope="${scopes.join(' ')}"` : ''}, ${metadata}`;
  }
  if (challenge === undefined) return error;
  return new GatewayError(error.code, error.details, {
    headers: { ...error.headers, 'www-authenticate': challenge },
    message: error.message,
    cause: error,
  });
}
