/**
 * The URLs the gateway gives out (issue 41): a presigned upload's `url` and an Anthropic batch's `results_url` start
 * with `server.public_base_url` when it is set, otherwise with the Host the caller used, and only when that Host is
 * syntactically a host (a name or an IP literal, an optional port): `Host: evil.example:666/x?y#` is a 400
 * `invalid_header` that creates nothing, never a URL pointing elsewhere that an SDK would then fetch with its key.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../helpers/gateway.js';
import { QUICK_BATCHES } from '../helpers/batch-fixtures.js';
import { waitForValue } from '../helpers/wait.js';

interface Exchange {
  status: number;
  json: Record<string, unknown> & { code?: string; details?: Record<string, unknown> };
}

/** One request on a new connection with the Host header given as is (undici would not send such a Host). */
function withHost(
  gw: TestGateway,
  method: string,
  path: string,
  host: string,
  body?: unknown,
  extra: Record<string, string> = {},
): Promise<Exchange> {
  const text = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: gw.port,
        method,
        path,
        agent: false,
        setHost: false,
        headers: {
          host,
          authorization: `Bearer ${ADMIN_TOKEN}`,
          ...extra,
          ...(text === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }),
        },
      },
      (res) => {
        let answer = '';
        res.setEncoding('utf8');
        res.on('data', (part: string) => (answer += part));
        res.once('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(answer) as Exchange['json'] }));
      },
    );
    req.once('error', reject);
    req.end(text);
  });
}

const uploadBody = { filename: 'a.jsonl', purpose: 'batch', bytes: 10, mime_type: 'application/jsonl', presign: true };
const batchBody = {
  requests: [
    { custom_id: 'one', params: { model: 'echo', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] } },
  ],
};

const presignedUrl = (answer: Exchange) => (answer.json.presigned_url as { url: string } | undefined)?.url;

/** Creates a batch through `host` and waits until it ended; returns it as read through `readHost`. */
async function endedBatch(gw: TestGateway, host: string, readHost: string): Promise<Record<string, unknown>> {
  const created = await withHost(gw, 'POST', '/v1/messages/batches', host, batchBody);
  assert.equal(created.status, 200, JSON.stringify(created.json));
  const id = String(created.json.id);
  const ended = await waitForValue(
    'the batch to end',
    () => withHost(gw, 'GET', `/v1/messages/batches/${id}`, readHost),
    (answer) => answer.json.processing_status === 'ended',
    20_000,
  );
  return ended.json;
}

const HOSTILE_HOSTS = [
  'evil.example:666/x?y#',
  'evil.example/path',
  'user@evil.example',
  'evil.example:99999',
  'evil.example:',
  '[::1',
  '[::1]x',
  'evil..example',
  '-evil.example',
  '999.1.1.1',
  'evil.example:0',
];

describe('URLs given out, from the Host', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ configFile: { name: 'gw.yaml', text: QUICK_BATCHES } });
  });
  after(async () => {
    await gw.close();
  });

  test('a Host that is not a host: 400 invalid_header naming the header, for a presigned upload', async () => {
    for (const host of HOSTILE_HOSTS) {
      const answer = await withHost(gw, 'POST', '/v1/uploads', host, uploadBody);
      assert.equal(answer.status, 400, `${host}: ${JSON.stringify(answer.json)}`);
      assert.equal(answer.json.code, 'invalid_header', host);
      assert.equal(answer.json.details?.header, 'host', host);
      assert.equal(answer.json.details?.received, host);
      assert.match(String(answer.json.details?.problem), /public_base_url/);
    }
  });

  test('a Host a URL parser refuses or reads as another host: 400, never a URL an SDK cannot fetch', async () => {
    // Each passed the syntax rule on its own: a zone id is a valid IPv6 literal for node:net, `example.123` and
    // `a.0x1` are labels, `0x7f.1` is not all digits. A WHATWG parser (every SDK's) throws on the first three and
    // reads the others as http://127.0.0.1 and http://10.0.0.1.
    for (const host of ['[fe80::1%eth0]', '[fe80::1%25eth0]:8080', 'example.123', 'a.0x1', '0x7f.1', '10.0.0.1.']) {
      const answer = await withHost(gw, 'POST', '/v1/uploads', host, uploadBody);
      assert.equal(answer.status, 400, `${host}: ${JSON.stringify(answer.json)}`);
      assert.equal(answer.json.code, 'invalid_header', host);
      assert.equal(answer.json.details?.header, 'host', host);
      assert.match(String(answer.json.details?.problem), /URL/, host);
    }
    // What is accepted gives out a URL that parses, naming the host the caller gave.
    for (const host of ['GW.Example.com:8443', 'xn--bcher-kva.example', '[::ffff:10.0.0.1]']) {
      const answer = await withHost(gw, 'POST', '/v1/uploads', host, uploadBody);
      assert.equal(answer.status, 200, `${host}: ${JSON.stringify(answer.json)}`);
      const url = new URL(String(presignedUrl(answer)));
      assert.ok(url.pathname.startsWith('/v1/uploads/upload_'), url.href);
    }
  });

  test('a Host that is not a host: 400 for an Anthropic batch, and no batch is made', async () => {
    const answer = await withHost(gw, 'POST', '/v1/messages/batches', 'evil.example:666/x?y#', batchBody);
    assert.equal(answer.status, 400, JSON.stringify(answer.json));
    assert.equal(answer.json.code, 'invalid_header');
    assert.equal(answer.json.details?.header, 'host');
    const list = await withHost(gw, 'GET', '/v1/messages/batches', '127.0.0.1');
    assert.deepEqual(list.json.data, []);
  });

  test('a valid host (name and port, IPv4, bracketed IPv6) is what the URLs start with', async () => {
    for (const [host, origin] of [
      ['gw.example.com:8443', 'http://gw.example.com:8443'],
      ['127.0.0.1', 'http://127.0.0.1'],
      ['[::1]:8080', 'http://[::1]:8080'],
      ['llm-gateway_1.internal.', 'http://llm-gateway_1.internal.'],
    ] as const) {
      const answer = await withHost(gw, 'POST', '/v1/uploads', host, uploadBody);
      assert.equal(answer.status, 200, `${host}: ${JSON.stringify(answer.json)}`);
      assert.ok(presignedUrl(answer)?.startsWith(`${origin}/v1/uploads/upload_`), presignedUrl(answer));
    }
    const batch = await endedBatch(gw, 'gw.example.com', 'gw.example.com:8443');
    assert.equal(batch.results_url, `http://gw.example.com:8443/v1/messages/batches/${String(batch.id)}/results`);
  });
});

describe('URLs given out, behind a trusted proxy', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ configFile: { name: 'gw.yaml', text: 'server:\n  trusted_proxies: [127.0.0.1]\n' } });
  });
  after(async () => {
    await gw.close();
  });

  test("the proxy's X-Forwarded-Host and -Proto are held to the same rule, and named when refused", async () => {
    const good = await withHost(gw, 'POST', '/v1/uploads', '10.0.0.5:8080', uploadBody, {
      'x-forwarded-host': 'llm.example.com',
      'x-forwarded-proto': 'https',
    });
    assert.equal(good.status, 200, JSON.stringify(good.json));
    assert.ok(presignedUrl(good)?.startsWith('https://llm.example.com/v1/uploads/upload_'), presignedUrl(good));
    const badHost = await withHost(gw, 'POST', '/v1/uploads', '10.0.0.5', uploadBody, {
      'x-forwarded-host': 'evil.example/x?',
    });
    assert.equal(badHost.status, 400, JSON.stringify(badHost.json));
    assert.equal(badHost.json.details?.header, 'x-forwarded-host');
    const badProto = await withHost(gw, 'POST', '/v1/uploads', '10.0.0.5', uploadBody, {
      'x-forwarded-proto': 'javascript',
    });
    assert.equal(badProto.status, 400, JSON.stringify(badProto.json));
    assert.equal(badProto.json.details?.header, 'x-forwarded-proto');
  });
});

describe('server.public_base_url', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      configFile: {
        name: 'gw.yaml',
        text: `${QUICK_BATCHES}\nserver:\n  public_base_url: https://llm.example.com/gw/\n`,
      },
    });
  });
  after(async () => {
    await gw.close();
  });

  test('every URL given out starts with it, whatever the Host says', async () => {
    const answer = await withHost(gw, 'POST', '/v1/uploads', 'evil.example:666/x?y#', uploadBody);
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.ok(presignedUrl(answer)?.startsWith('https://llm.example.com/gw/v1/uploads/upload_'), presignedUrl(answer));
    const batch = await endedBatch(gw, 'evil.example', 'evil.example:666/x?y#');
    assert.equal(batch.results_url, `https://llm.example.com/gw/v1/messages/batches/${String(batch.id)}/results`);
  });

  test('a base URL with a query, a fragment or credentials is refused at load, naming the field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-origin-'));
    try {
      for (const url of [
        'https://a.example/?x=1',
        'https://a.example/#f',
        'https://u:p@a.example',
        'ftp://a.example',
      ]) {
        const file = join(dir, 'gw.json');
        writeFileSync(file, JSON.stringify({ server: { public_base_url: url } }));
        assert.throws(
          () => loadConfig({ GATEWAY_ENV: 'dev', ADMIN_TOKEN, GATEWAY_CONFIG: file }),
          (error: unknown) =>
            error instanceof ConfigError && error.problems.some((p) => p.includes('server.public_base_url: must be')),
          url,
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
