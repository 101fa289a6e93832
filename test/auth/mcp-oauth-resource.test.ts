/**
 * The gateway as an OAuth 2.1 resource server for MCP clients: the RFC 9728 protected-resource metadata (read by the
 * MCP SDK's own client discovery), the `WWW-Authenticate: Bearer resource_metadata=...` challenge of the real /mcp's
 * 401 (parsed and followed by the SDK's own client code), and the tools an OAuth token is given (`mcp.oauth_tools`). A local
 * issuer: a JWKS server on loopback with keys generated at test time, tokens signed with jose.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import {
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthProtectedResourceMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { toolRightsOf, type Principal } from '../../src/auth/principal.js';
import type { Authenticator } from '../../src/auth/authenticator.js';
import { DEFAULT_OAUTH_SCOPES, GRANTABLE_ROUTES } from '../../src/names/api-names.js';
import { wireAuth } from '../../src/wiring/auth-wiring.js';

const ISSUER = 'https://login.test.example/';
const AUDIENCE = 'https://gateway.test.example/mcp';

describe('OAuth 2.1 resource server for MCP clients (RFC 9728, MCP authorization)', () => {
  let gw: TestGateway;
  let plain: TestGateway;
  let jwksServer: Server;
  let key: Awaited<ReturnType<typeof generateKeyPair>>;
  let auth: Authenticator;

  const sign = (scope: string, audience = AUDIENCE) =>
    new SignJWT({ scope })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setAudience(audience)
      .setSubject('agent-7')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(key.privateKey);

  before(async () => {
    key = await generateKeyPair('RS256', { extractable: true });
    const published = [{ ...(await exportJWK(key.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }];
    jwksServer = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', r));
    const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks.json`;
    gw = await startGateway({
      configFile: {
        name: 'oauth-mcp.json',
        text: JSON.stringify({
          auth: {
            oauth: {
              issuer: ISSUER,
              // The /mcp URL for MCP clients (RFC 8707 resource), and the name the other callers' tokens carry.
              audience: ['llm-gateway', AUDIENCE],
              jwks_url: jwksUrl,
              scopes: { 'tools:call': ['mcp'], 'chat:write': ['chat'], 'agent:all': ['chat', 'mcp'] },
            },
          },
          mcp: { oauth_tools: ['fs/read_*', 'everything/echo'] },
        }),
      },
    });
    plain = await startGateway();
    // What the wiring builds from this config (oauth_tools included): the principals /mcp is given.
    auth = wireAuth(gw.config, undefined, { routes: GRANTABLE_ROUTES, oauthScopes: DEFAULT_OAUTH_SCOPES }).auth;
  });
  after(async () => {
    await gw.close();
    await plain.close();
    await new Promise((r) => jwksServer.close(r));
  });

  test('GET /.well-known/oauth-protected-resource[/mcp]: the RFC 9728 document naming the issuer, no auth needed', async () => {
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const answer = await call(`${gw.url}${path}`);
      assert.equal(answer.status, 200, answer.text);
      assert.match(String(answer.headers['content-type']), /^application\/json/);
      assert.deepEqual(answer.json, {
        resource: `${gw.url}/mcp`,
        authorization_servers: [ISSUER],
        bearer_methods_supported: ['header'],
        scopes_supported: ['agent:all', 'tools:call'],
        resource_name: 'LLM gateway MCP tools',
      });
      assert.doesNotThrow(() => OAuthProtectedResourceMetadataSchema.parse(answer.json));
    }
    // The MCP SDK's own client discovery, from the server URL a client is given, finds the same document.
    const discovered = await discoverOAuthProtectedResourceMetadata(new URL(`${gw.url}/mcp`));
    assert.deepEqual(discovered.authorization_servers, [ISSUER]);
    assert.equal(discovered.resource, `${gw.url}/mcp`);
  });

  test('a Host header that is not a host is refused: the resource URL is never built from it', async () => {
    const spoofed = await call(`${gw.url}/.well-known/oauth-protected-resource/mcp`, {
      headers: { host: 'evil.example:666/x?y#' },
    });
    assert.deepEqual([spoofed.status, spoofed.json.code], [400, 'invalid_header']);
  });

  test('without an OAuth issuer configured: 404 in the gateway error shape, saying why', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const answer = await call(`${plain.url}${path}`);
      assert.deepEqual([answer.status, answer.json.code], [404, 'not_found'], answer.text);
      assert.match(String(answer.json.details?.problem), /no OAuth issuer configured \(auth\.oauth\)/);
      assert.equal(typeof answer.json.message, 'string');
    }
    await assert.rejects(discoverOAuthProtectedResourceMetadata(new URL(`${plain.url}/mcp`)), /does not implement/);
  });

  test('a 401 on /mcp carries WWW-Authenticate with resource_metadata, which the SDK client reads and follows', async () => {
    for (const authorization of [undefined, 'Bearer eyJhbGciOiJSUzI1NiJ9.e30.bad']) {
      const response = await fetch(`${gw.url}/mcp`, {
        method: 'POST',
        headers: authorization ? { authorization } : {},
      });
      assert.equal(response.status, 401);
      const challenge = response.headers.get('www-authenticate') ?? '';
      assert.match(challenge, /^Bearer realm="llm-gateway"/);
      const params = extractWWWAuthenticateParams(response);
      assert.equal(params.resourceMetadataUrl?.href, `${gw.url}/.well-known/oauth-protected-resource/mcp`);
      if (authorization) assert.equal(params.error, 'invalid_token');
      await response.body?.cancel();
      // Followed as the SDK's client does: the document it names leads to the issuer.
      const metadata = await discoverOAuthProtectedResourceMetadata(new URL(`${gw.url}/mcp`), {
        resourceMetadataUrl: params.resourceMetadataUrl as URL,
      });
      assert.deepEqual(metadata.authorization_servers, [ISSUER]);
    }
    // The same on a server's own endpoint.
    const perServer = await fetch(`${gw.url}/mcp/everything`, { method: 'POST' });
    assert.equal(perServer.status, 401);
    assert.match(perServer.headers.get('www-authenticate') ?? '', /resource_metadata="[^"]+\/mcp"/);
    await perServer.body?.cancel();
    // Without OAuth configured, /mcp's 401 is the plain Bearer challenge (no metadata to point at).
    const plainAnswer = await fetch(`${plain.url}/mcp`, { method: 'POST' });
    assert.deepEqual(
      [plainAnswer.status, plainAnswer.headers.get('www-authenticate')],
      [401, 'Bearer realm="llm-gateway"'],
    );
    await plainAnswer.body?.cancel();
    // A token of another audience (a token for another resource) is refused: the audience is checked.
    const elsewhere = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await sign('tools:call', 'https://other.example/api')}` },
    });
    assert.equal(elsewhere.status, 401);
    const refused = (await elsewhere.json()) as { code: string; details: { claim?: string } };
    assert.deepEqual([refused.code, refused.details.claim], ['token_claim_invalid', 'aud']);
    assert.match(elsewhere.headers.get('www-authenticate') ?? '', /resource_metadata="/);
  });

  test('a token without a scope granting mcp: 403 insufficient_scope naming the scopes that would', async () => {
    const response = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await sign('chat:write')}` },
    });
    assert.equal(response.status, 403);
    const params = extractWWWAuthenticateParams(response);
    assert.deepEqual(
      [params.error, params.scope, params.resourceMetadataUrl?.pathname],
      ['insufficient_scope', 'agent:all tools:call', '/.well-known/oauth-protected-resource/mcp'],
    );
    assert.equal(((await response.json()) as { code: string }).code, 'route_not_allowed');
  });

  test('an OAuth token with the mcp scope gets mcp.oauth_tools; the admin token every tool', async () => {
    const principal: Principal = await auth.authenticate(`Bearer ${await sign('tools:call')}`, 'mcp');
    assert.deepEqual([principal.kind, principal.mcpTools], ['oauth', ['fs/read_*', 'everything/echo']]);
    const rights = toolRightsOf(principal);
    assert.deepEqual(
      [rights.allows('fs', 'read_file'), rights.allows('everything', 'echo'), rights.allows('fs', 'write_file')],
      [true, true, false],
    );
    const otherAudience = await auth.authenticate(`Bearer ${await sign('tools:call', 'llm-gateway')}`, 'mcp');
    assert.equal(otherAudience.caller, 'oauth:agent-7', 'either configured audience is accepted');
    const chatOnly = await auth.authenticate(`Bearer ${await sign('chat:write')}`, 'chat');
    assert.equal(toolRightsOf(chatOnly).allows('fs', 'read_file'), false, 'a token without the mcp route: no tool');
    const admin = await auth.authenticate(`Bearer ${ADMIN_TOKEN}`, 'mcp');
    assert.equal(toolRightsOf(admin).allows('any', 'thing'), true);
  });
});
