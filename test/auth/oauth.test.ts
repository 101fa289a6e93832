/**
 * OAuth 2.0 access tokens against a local issuer: a real JWKS server on loopback with keys generated at test
 * time, tokens signed with jose, and the real gateway verifying them.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type JWK } from 'jose';
import { createHmac } from 'node:crypto';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { CHAT_PATH, chatBody, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { waitForValue } from '../helpers/wait.js';

const ISSUER = 'https://login.test.example/';
const AUDIENCE = 'llm-gateway';

describe('OAuth 2.0 access tokens (JWT) from a configured issuer', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  let jwksServer: Server;
  let published: JWK[] = [];
  let jwksFetches = 0;
  type Key = Awaited<ReturnType<typeof generateKeyPair>>;
  let current: Key;
  let next: Key;
  let stranger: Key;

  const sign = async (
    key: Key,
    kid: string,
    claims: Record<string, unknown> = {},
    options: { alg?: string; exp?: number | string; nbf?: number } = {},
  ) => {
    const now = Math.floor(Date.now() / 1000);
    const jwt = new SignJWT({ scope: 'chat:write models:read', ...claims })
      .setProtectedHeader({ alg: options.alg ?? 'RS256', kid, typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject('client-42')
      .setIssuedAt(now)
      .setExpirationTime(options.exp ?? now + 300);
    if (options.nbf !== undefined) jwt.setNotBefore(options.nbf);
    return jwt.sign(key.privateKey);
  };
  const chatWith = (token: string) =>
    call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: chatBody(),
    });

  before(async () => {
    [current, next, stranger] = await Promise.all([
      generateKeyPair('RS256', { extractable: true }),
      generateKeyPair('RS256', { extractable: true }),
      generateKeyPair('RS256', { extractable: true }),
    ]);
    published = [{ ...(await exportJWK(current.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }];
    jwksServer = createServer((req, res) => {
      jwksFetches += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', r));
    const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/.well-known/jwks.json`;
    mock = await startOpenAiUpstream();
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl },
      configFile: {
        name: 'oauth.json',
        text: JSON.stringify({
          auth: {
            oauth: {
              issuer: ISSUER,
              audience: AUDIENCE,
              jwks_url: jwksUrl,
              clock_tolerance_seconds: 5,
              jwks_refresh_cooldown_seconds: 2,
            },
          },
        }),
      },
    });
  });
  after(async () => {
    await gw.close();
    await mock.close();
    await new Promise((r) => jwksServer.close(r));
  });

  test('a valid token is accepted: the caller is oauth:<sub>, and the scopes grant the routes', async () => {
    const answer = await chatWith(await sign(current, 'k1'));
    assert.equal(answer.status, 200, answer.text);
    const line = await waitForValue(
      'the access line of the call',
      () =>
        gw.logLines
          .map((l) => JSON.parse(l) as { request_id?: string; caller?: string })
          .find((l) => l.request_id === answer.headers['x-request-id']),
      (l) => l !== undefined,
    );
    assert.equal(line?.caller, 'oauth:client-42');
    const models = await call(`${gw.url}/v1/?route=models`, {
      headers: { authorization: `Bearer ${await sign(current, 'k1')}` },
    });
    assert.equal(models.status, 200);
  });

  test('a scope that does not grant the route: 403 route_not_allowed', async () => {
    const token = await sign(current, 'k1', { scope: 'models:read' });
    const answer = await chatWith(token);
    assert.deepEqual(
      [answer.status, answer.json.code, answer.json.details?.allowed_routes],
      [403, 'route_not_allowed', ['models']],
    );
  });

  test('expired, not yet valid, wrong issuer, wrong audience: each a 401 with its own code', async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await chatWith(await sign(current, 'k1', {}, { exp: now - 60 }));
    assert.deepEqual([expired.status, expired.json.code], [401, 'token_expired']);
    assert.match(String(expired.headers['www-authenticate']), /error="invalid_token"/);
    const early = await chatWith(await sign(current, 'k1', {}, { nbf: now + 120 }));
    assert.deepEqual([early.status, early.json.code], [401, 'token_not_yet_valid']);
    const issuer = await chatWith(
      await new SignJWT({ scope: 'chat:write' })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer('https://evil.example/')
        .setAudience(AUDIENCE)
        .setSubject('x')
        .setExpirationTime(now + 60)
        .sign(current.privateKey),
    );
    assert.deepEqual(
      [issuer.status, issuer.json.code, issuer.json.details?.claim],
      [401, 'token_claim_invalid', 'iss'],
    );
    const audience = await chatWith(
      await new SignJWT({ scope: 'chat:write' })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer(ISSUER)
        .setAudience('another-api')
        .setSubject('x')
        .setExpirationTime(now + 60)
        .sign(current.privateKey),
    );
    assert.deepEqual(
      [audience.status, audience.json.code, audience.json.details?.claim],
      [401, 'token_claim_invalid', 'aud'],
    );
    assert.equal(mock.chatRequests().length, 1, 'only the valid call of the first test reached the upstream');
  });

  test('alg none and HMAC (even keyed with the public key) are refused; a forged signature is invalid_token', async () => {
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: ISSUER, aud: AUDIENCE, sub: 'x', exp: now + 60, scope: 'chat:write' };
    const none = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
    assert.deepEqual(
      [(await chatWith(none)).status, (await chatWith(none)).json.code],
      [401, 'token_algorithm_not_allowed'],
    );
    const publicPem = JSON.stringify(published[0]);
    const signingInput = `${b64({ alg: 'HS256', kid: 'k1' })}.${b64(claims)}`;
    const hs = `${signingInput}.${createHmac('sha256', publicPem).update(signingInput).digest('base64url')}`;
    const confused = await chatWith(hs);
    assert.deepEqual(
      [confused.status, confused.json.code, confused.json.details?.alg],
      [401, 'token_algorithm_not_allowed', 'HS256'],
    );
    const valid = await sign(current, 'k1');
    const forged = `${valid.split('.').slice(0, 2).join('.')}.${(await sign(stranger, 'k1')).split('.')[2]}`;
    assert.deepEqual([(await chatWith(forged)).status, (await chatWith(forged)).json.code], [401, 'invalid_token']);
  });

  test('key rotation: an unknown kid refreshes the JWKS (at most once per cooldown); a kid still unknown is token_key_unknown', async () => {
    const before = jwksFetches;
    const unknown = await chatWith(await sign(stranger, 'k-unknown'));
    assert.deepEqual([unknown.status, unknown.json.code], [401, 'token_key_unknown']);
    await chatWith(await sign(stranger, 'k-unknown-2'));
    assert.ok(jwksFetches - before <= 1, `refreshes are rate-limited (${jwksFetches - before} fetches)`);
    // The issuer publishes its next key; after the cooldown a token signed with it is accepted.
    published = [...published, { ...(await exportJWK(next.publicKey)), kid: 'k2', alg: 'RS256', use: 'sig' }];
    const publishedAt = Date.now();
    // Within the cooldown (2 s) the JWKS is not fetched again, so the new key stays unknown; after it, the next
    // token with the unknown kid triggers one fetch and is accepted.
    const rotated = await waitForValue(
      'a token signed with the new key is accepted',
      async () => chatWith(await sign(next, 'k2')),
      (a) => a.status === 200,
      6_000,
    );
    assert.equal(rotated.status, 200, rotated.text);
    assert.ok(Date.now() - publishedAt >= 1_000, 'not before the refresh cooldown allowed a new fetch');
    assert.equal((await chatWith(await sign(current, 'k1'))).status, 200, 'the old key still works while published');
  });
});
