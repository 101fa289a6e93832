/**
 * The gateway's own HTTPS listener (TLS 1.2+, certificate reloaded without a restart) and Basic authentication,
 * accepted only over HTTPS. Certificates are made at test time with the openssl command line.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type PeerCertificate, type TLSSocket } from 'node:tls';
import { Agent } from 'undici';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { CHAT_PATH, chatBody, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { hashPassword } from '../../src/secrets/password.js';
import {
  CHAT_PATH as PROCESS_CHAT_PATH,
  bearer,
  httpCall,
  killAllGateways,
  removeTempDirs,
  startGatewayProcess,
} from '../helpers/spawn-gateway.js';

const PASSWORD = 'correct horse battery staple';

function makeCertificate(dir: string, name = 'server'): { certFile: string; keyFile: string } {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  return { certFile, keyFile };
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

function handshake(
  port: number,
  options: { minVersion: 'TLSv1.1' | 'TLSv1.2'; maxVersion: 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3' },
): Promise<{ protocol: string | null; fingerprint: string } | { error: string }> {
  return new Promise((resolve) => {
    const socket = connect(
      { host: '127.0.0.1', port, rejectUnauthorized: false, ciphers: 'DEFAULT@SECLEVEL=0', ...options },
      () => {
        const cert: PeerCertificate = socket.getPeerCertificate();
        resolve({ protocol: socket.getProtocol(), fingerprint: cert.fingerprint256 });
        socket.end();
      },
    );
    socket.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
  });
}

describe('HTTPS listener and Basic authentication', () => {
  let dir: string;
  let mock: OpenAiUpstream;
  let tlsGateway: TestGateway;
  let plainGateway: TestGateway;
  let proxiedGateway: TestGateway;
  let trust: Agent;
  let files: { certFile: string; keyFile: string };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-tls-'));
    files = makeCertificate(dir);
    trust = new Agent({ connect: { ca: readFileSync(files.certFile) } });
    mock = await startOpenAiUpstream();
    const hash = await hashPassword(PASSWORD);
    const users = { basic_users: [{ username: 'alice', password_hash_env: 'ALICE_HASH', routes: ['chat'] }] };
    const env = { UPSTREAM_BASE_URL: mock.baseUrl, ALICE_HASH: hash };
    tlsGateway = await startGateway({
      env,
      configFile: {
        name: 'tls.json',
        text: JSON.stringify({ server: { tls: { cert_file: files.certFile, key_file: files.keyFile } }, auth: users }),
      },
    });
    plainGateway = await startGateway({
      env,
      configFile: { name: 'plain.json', text: JSON.stringify({ auth: users }) },
    });
    proxiedGateway = await startGateway({
      env,
      configFile: {
        name: 'proxied.json',
        text: JSON.stringify({ server: { trusted_proxies: ['127.0.0.1'] }, auth: users }),
      },
    });
  });
  after(async () => {
    await tlsGateway.close();
    await plainGateway.close();
    await proxiedGateway.close();
    await trust.close();
    await mock.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the gateway serves HTTPS; Basic works over it; a wrong password or an unknown user is invalid_credentials', async () => {
    assert.match(tlsGateway.url, /^https:/);
    const health = await call(`${tlsGateway.url}/v1/?route=health`, { dispatcher: trust });
    assert.equal(health.status, 200);
    const ok = await call(`${tlsGateway.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { authorization: basic('alice', PASSWORD), 'content-type': 'application/json' },
      body: chatBody(),
      dispatcher: trust,
    });
    assert.equal(ok.status, 200, ok.text);
    await new Promise((r) => setTimeout(r, 20));
    assert.ok(
      tlsGateway.logLines.some(
        (l) =>
          l.includes(`"request_id":"${String(ok.headers['x-request-id'])}"`) && l.includes('"caller":"basic:alice"'),
      ),
    );
    for (const header of [basic('alice', 'wrong password!!'), basic('mallory', PASSWORD)]) {
      const refused = await call(`${tlsGateway.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: { authorization: header, 'content-type': 'application/json' },
        body: chatBody(),
        dispatcher: trust,
      });
      assert.deepEqual([refused.status, refused.json.code], [401, 'invalid_credentials']);
      assert.match(String(refused.headers['www-authenticate']), /^Basic realm="llm-gateway"/);
    }
    const models = await call(`${tlsGateway.url}/v1/?route=models`, {
      headers: { authorization: basic('alice', PASSWORD) },
      dispatcher: trust,
    });
    assert.deepEqual([models.status, models.json.code], [403, 'route_not_allowed'], 'alice has the chat route only');
    assert.ok(!tlsGateway.logLines.join('\n').includes(PASSWORD), 'the password is never logged');
  });

  test('TLS 1.1 is refused at the handshake; TLS 1.2 and 1.3 are accepted', async () => {
    const old = await handshake(tlsGateway.port, { minVersion: 'TLSv1.1', maxVersion: 'TLSv1.1' });
    assert.ok('error' in old, `a TLS 1.1 handshake must fail, got ${JSON.stringify(old)}`);
    // The client can speak TLS 1.1 (SECLEVEL=0; checked against a server that allows it while writing this test): the refusal is the server's protocol_version alert.
    assert.equal(old.error, 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION');
    const v12 = await handshake(tlsGateway.port, { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' });
    assert.equal('protocol' in v12 ? v12.protocol : v12.error, 'TLSv1.2');
    const v13 = await handshake(tlsGateway.port, { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' });
    assert.equal('protocol' in v13 ? v13.protocol : v13.error, 'TLSv1.3');
  });

  test('a new certificate written over the files is served without a restart', async () => {
    const before = await handshake(tlsGateway.port, { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' });
    assert.ok('fingerprint' in before);
    const fresh = makeCertificate(dir, 'next');
    execFileSync('cp', [fresh.keyFile, files.keyFile]);
    execFileSync('cp', [fresh.certFile, files.certFile]);
    const expected = execFileSync('openssl', ['x509', '-in', files.certFile, '-noout', '-fingerprint', '-sha256'])
      .toString()
      .split('=')[1]
      ?.trim();
    const deadline = Date.now() + 8_000;
    let served = before.fingerprint;
    while (served !== expected && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      const now = await handshake(tlsGateway.port, { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' });
      if ('fingerprint' in now) served = now.fingerprint;
    }
    assert.notEqual(expected, before.fingerprint);
    assert.equal(served, expected, 'the new certificate is served');
  });

  test('Basic over plain HTTP is refused with basic_auth_requires_https, even with the right password', async () => {
    const refused = await call(`${plainGateway.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { authorization: basic('alice', PASSWORD), 'content-type': 'application/json' },
      body: chatBody(),
    });
    assert.deepEqual([refused.status, refused.json.code], [401, 'basic_auth_requires_https']);
    const spoofed = await call(`${plainGateway.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: {
        authorization: basic('alice', PASSWORD),
        'x-forwarded-proto': 'https',
        'content-type': 'application/json',
      },
      body: chatBody(),
    });
    assert.equal(spoofed.json.code, 'basic_auth_requires_https', 'X-Forwarded-Proto from an untrusted peer is ignored');
  });

  test('behind a trusted proxy that says X-Forwarded-Proto: https, Basic is accepted', async () => {
    const viaProxy = await call(`${proxiedGateway.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: {
        authorization: basic('alice', PASSWORD),
        'x-forwarded-proto': 'https',
        'content-type': 'application/json',
      },
      body: chatBody(),
    });
    assert.equal(viaProxy.status, 200, viaProxy.text);
    const withoutHeader = await call(`${proxiedGateway.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { authorization: basic('alice', PASSWORD), 'content-type': 'application/json' },
      body: chatBody(),
    });
    assert.equal(withoutHeader.json.code, 'basic_auth_requires_https');
  });
});

describe('upstream TLS: 1.2 or newer', () => {
  let dir: string;
  const servers: HttpsServer[] = [];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'gw-up-tls-'));
  });
  after(async () => {
    for (const s of servers) await new Promise((r) => s.close(r));
    await killAllGateways();
    removeTempDirs();
    rmSync(dir, { recursive: true, force: true });
  });

  /** An OpenAI-compatible upstream over HTTPS, limited to the given protocol versions. */
  async function upstream(
    versions: { minVersion: 'TLSv1' | 'TLSv1.2'; maxVersion: 'TLSv1.1' | 'TLSv1.3' },
    name: string,
  ): Promise<string> {
    const { certFile, keyFile } = makeCertificate(dir, name);
    const server = createHttpsServer(
      { key: readFileSync(keyFile), cert: readFileSync(certFile), ciphers: 'DEFAULT@SECLEVEL=0', ...versions },
      (req, res) => {
        req.resume();
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              id: 'c1',
              object: 'chat.completion',
              created: 1,
              model: 'm',
              choices: [
                {
                  index: 0,
                  message: { role: 'assistant', content: `over ${(req.socket as TLSSocket).getProtocol()}` },
                  finish_reason: 'stop',
                },
              ],
            }),
          );
        });
      },
    );
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return certFile;
  }

  test(
    'the gateway refuses an upstream that only speaks TLS 1.1 (and uses one that speaks 1.2+)',
    { timeout: 30_000 },
    async () => {
      const modernCa = await upstream({ minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' }, 'modern');
      const legacyCa = await upstream({ minVersion: 'TLSv1', maxVersion: 'TLSv1.1' }, 'legacy');
      const port = (s: HttpsServer) => (s.address() as AddressInfo).port;
      const config = join(dir, 'gateway.json');
      writeFileSync(
        config,
        JSON.stringify({
          upstreams: [
            {
              name: 'modern',
              base_url: `https://127.0.0.1:${port(servers[0] as HttpsServer)}/v1`,
              health_check: 'none',
            },
            {
              name: 'legacy',
              base_url: `https://127.0.0.1:${port(servers[1] as HttpsServer)}/v1`,
              health_check: 'none',
            },
          ],
          models: [
            { id: 'm-modern', upstream: 'modern' },
            { id: 'm-legacy', upstream: 'legacy' },
          ],
        }),
      );
      const bundle = join(dir, 'ca.pem');
      writeFileSync(bundle, `${readFileSync(modernCa, 'utf8')}${readFileSync(legacyCa, 'utf8')}`);
      const token = 'upstream-tls-admin-token-0123';
      // Both certificates trusted (NODE_EXTRA_CA_CERTS): only the protocol version can make the difference.
      const gw = await startGatewayProcess({
        env: {
          GATEWAY_ENV: 'prod',
          ADMIN_TOKEN: token,
          GATEWAY_CONFIG: config,
          NODE_EXTRA_CA_CERTS: bundle,
          LOG_LEVEL: 'warn',
        },
      });
      const ask = (model: string) =>
        httpCall(`${gw.url}${PROCESS_CHAT_PATH}`, {
          method: 'POST',
          headers: bearer(token, { 'content-type': 'application/json' }),
          body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
        });
      const modern = await ask('m-modern');
      assert.equal(modern.status, 200, modern.text);
      assert.match(modern.text, /over TLSv1\.[23]/);
      const legacy = await ask('m-legacy');
      assert.equal(legacy.status, 503, legacy.text);
      assert.match(legacy.text, /"code":"upstream_unreachable".*"reason":"ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION"/);
    },
  );
});
