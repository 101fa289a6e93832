import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { readStream } from '../helpers/sse-client.js';

function configFile(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'gw-presets-')), 'g.yaml');
  writeFileSync(path, text);
  return path;
}

describe('OpenAI-compatible presets', () => {
  test('a preset fills base_url; base_url overrides it; Azure and the plain kind need one', () => {
    const groq = loadConfig({ GATEWAY_CONFIG: configFile('upstreams:\n  - { name: g, kind: groq }\n') }).upstreams[0];
    assert.deepEqual(
      [groq?.baseUrl, groq?.auth, groq?.deploymentInPath],
      ['https://api.groq.com/openai/v1', 'bearer', false],
    );
    const local = loadConfig({
      GATEWAY_CONFIG: configFile(
        'upstreams:\n  - { name: o, kind: ollama, base_url: "http://10.0.0.5:11434/v1/", allow_insecure_http: true }\n',
      ),
    }).upstreams[0];
    assert.equal(local?.baseUrl, 'http://10.0.0.5:11434/v1');
    // Plain HTTP beyond loopback needs the explicit opt-in (TLS 1.2+ otherwise).
    assert.throws(
      () =>
        loadConfig({
          GATEWAY_CONFIG: configFile(
            'upstreams:\n  - { name: o, kind: ollama, base_url: "http://10.0.0.5:11434/v1/" }\n',
          ),
        }),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.problems.some((p) => p.startsWith('upstreams[0].base_url: plain http:// to a host that is not loopback')),
    );
    assert.equal(
      loadConfig({ GATEWAY_CONFIG: configFile('upstreams:\n  - { name: o, kind: ollama }\n') }).upstreams[0]?.baseUrl,
      'http://127.0.0.1:11434/v1',
      'the local presets stay on loopback',
    );
    for (const kind of ['azure', 'openai-compatible']) {
      assert.throws(
        () => loadConfig({ GATEWAY_CONFIG: configFile(`upstreams:\n  - { name: x, kind: ${kind} }\n`) }),
        (e: unknown) =>
          e instanceof ConfigError && e.problems.some((p) => p === `upstreams[0].base_url: required for kind ${kind}`),
      );
    }
    const azure = loadConfig({
      GATEWAY_CONFIG: configFile(
        'upstreams:\n  - { name: az, kind: azure, base_url: "https://r.openai.azure.com/openai" }\n',
      ),
    }).upstreams[0];
    assert.deepEqual([azure?.auth, azure?.deploymentInPath, azure?.apiVersion], ['api-key', true, '2024-10-21']);
  });
});

describe('Azure OpenAI addressing on the wire', () => {
  let server: Server;
  let gw: TestGateway;
  const seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders; body: string }> = [];
  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json' });
        if (req.url?.startsWith('/openai/models'))
          return res.end(JSON.stringify({ data: [{ id: 'gpt-4o', created: 1_721_260_800 }] }));
        res.end(
          JSON.stringify({
            id: 'chatcmpl-az',
            object: 'chat.completion',
            created: 1,
            model: 'gpt-4o',
            choices: [{ index: 0, message: { role: 'assistant', content: 'from azure' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    gw = await startGateway({
      env: { AZURE_TEST_KEY: 'azure-key-0123456789' },
      configFile: {
        name: 'azure.yaml',
        text: [
          'upstreams:',
          `  - { name: az, kind: azure, base_url: "http://127.0.0.1:${port}/openai", api_key_env: AZURE_TEST_KEY, api_version: "2025-01-01-preview" }`,
          'models:',
          '  - { id: gpt4o, upstream: az, upstream_model: my-gpt4o-deployment }',
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  test('deployment in the path, api-version in the query, the key in api-key (never Authorization)', async () => {
    const answer = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'gpt4o' }),
    });
    assert.equal(answer.status, 200, answer.text);
    const chat = seen.find((s) => s.method === 'POST');
    assert.equal(chat?.url, '/openai/deployments/my-gpt4o-deployment/chat/completions?api-version=2025-01-01-preview');
    assert.equal(chat?.headers['api-key'], 'azure-key-0123456789');
    assert.equal(chat?.headers.authorization, undefined);
    const health = await call(`${gw.url}/v1/?route=health`);
    assert.equal((health.json.checks as { upstreams: Record<string, { status: string }> }).upstreams.az?.status, 'ok');
    assert.ok(seen.some((s) => s.url === '/openai/models?api-version=2025-01-01-preview'));
  });
});

describe('usage on every stream (presets that support stream_options)', () => {
  let gw: TestGateway;
  let mock: OpenAiUpstream;
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({
      configFile: {
        name: 'usage.yaml',
        text: `upstreams:\n  - { name: oa, kind: openai, base_url: "${mock.baseUrl}" }\ndefault_upstream: oa\n`,
      },
    });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  test('the gateway asks for usage, keeps the usage chunk from a caller who did not ask, and records it', async () => {
    mock.enqueue({ kind: 'stream' });
    const answer = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders());
    assert.ok(answer.text.endsWith('data: [DONE]\n\n'));
    assert.ok(!/"usage":\{/.test(answer.text), 'the caller did not ask for usage: no usage chunk');
    assert.deepEqual((mock.chatRequests()[0]?.json as { stream_options?: unknown }).stream_options, {
      include_usage: true,
    });
    await new Promise((r) => setTimeout(r, 20));
    const line = gw.logLines
      .map((l) => JSON.parse(l) as { msg?: string; route?: string; prompt_tokens?: number; completion_tokens?: number })
      .filter((l) => l.msg === 'request' && l.route === 'chat')
      .at(-1);
    assert.ok((line?.prompt_tokens ?? 0) + (line?.completion_tokens ?? 0) > 0, JSON.stringify(line));

    mock.enqueue({ kind: 'stream' });
    const asked = await readStream(
      `${gw.url}${CHAT_PATH}`,
      chatBody({ stream: true, stream_options: { include_usage: true } }),
      authHeaders(),
    );
    assert.ok(/"usage":\{"prompt_tokens"/.test(asked.text), 'a caller who asked gets the usage chunk');
  });
});

describe('usage on every stream of a plain UPSTREAM_BASE_URL server (stream_usage: auto)', () => {
  let gw: TestGateway;
  let mock: OpenAiUpstream;
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({ env: { UPSTREAM_BASE_URL: mock.baseUrl } });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  const lastChatLine = () =>
    gw.logLines
      .map((l) => JSON.parse(l) as { msg?: string; route?: string; prompt_tokens?: number; completion_tokens?: number })
      .filter((l) => l.msg === 'request' && l.route === 'chat')
      .at(-1);

  test("asks for usage (appended to the caller's own bytes), keeps the chunk from the caller, records the tokens", async () => {
    mock.reset();
    mock.enqueue({ kind: 'stream' });
    const sent = chatBody({ stream: true });
    const answer = await readStream(`${gw.url}${CHAT_PATH}`, sent, authHeaders());
    assert.ok(answer.text.endsWith('data: [DONE]\n\n'));
    assert.ok(!/"usage":\{/.test(answer.text), 'the caller did not ask for usage: no usage chunk');
    assert.equal(mock.chatRequests()[0]?.body, `${sent.slice(0, -1)},"stream_options":{"include_usage":true}}`);
    const line = lastChatLine();
    assert.ok((line?.prompt_tokens ?? 0) > 0 && (line?.completion_tokens ?? 0) > 0, JSON.stringify(line));
  });

  test('a server that refuses stream_options: the call succeeds without it, and the upstream is not asked again', async () => {
    mock.reset();
    const refusing = {
      kind: 'raw' as const,
      handler: (_req: unknown, res: ServerResponse, body: string) => {
        const json = JSON.parse(body) as { stream_options?: unknown };
        if (json.stream_options !== undefined) {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(
            '{"error":{"message":"Unrecognized request argument supplied: stream_options","type":"invalid_request_error"}}',
          );
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(
          'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
        );
      },
    };
    mock.defaultBehavior = refusing;
    const sent = chatBody({ stream: true });
    const first = await readStream(`${gw.url}${CHAT_PATH}`, sent, authHeaders());
    assert.equal(first.status, 200, first.text);
    assert.ok(first.text.includes('"ok"') && first.text.endsWith('data: [DONE]\n\n'));
    assert.deepEqual(
      mock.chatRequests().map((r) => (r.json as { stream_options?: unknown }).stream_options),
      [{ include_usage: true }, undefined],
    );
    assert.equal(mock.chatRequests()[1]?.body, sent, "the retry forwards the caller's bytes untouched");

    const second = await readStream(`${gw.url}${CHAT_PATH}`, sent, authHeaders());
    assert.equal(second.status, 200);
    assert.equal(mock.chatRequests().length, 3, 'one request: the refusal is remembered');
    assert.equal(mock.chatRequests()[2]?.body, sent);
  });

  test("a 400 that is the caller's own fault is not mistaken for a refusal of stream_options", async () => {
    // A fresh gateway: the one above has learned already.
    const own = await startGateway({ env: { UPSTREAM_BASE_URL: mock.baseUrl } });
    try {
      mock.reset();
      mock.defaultBehavior = {
        kind: 'error',
        status: 400,
        body: { error: { message: 'temperature is too high', type: 'invalid_request_error' } },
      };
      const answer = await readStream(`${own.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders());
      assert.equal(answer.status, 400);
      assert.equal(
        (JSON.parse(answer.text) as { details: { upstream_message: string } }).details.upstream_message,
        'temperature is too high',
      );
      mock.defaultBehavior = { kind: 'stream' };
      await readStream(`${own.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders());
      assert.deepEqual(
        (mock.chatRequests().at(-1)?.json as { stream_options?: unknown }).stream_options,
        { include_usage: true },
        'still asked',
      );
    } finally {
      await own.close();
    }
  });
});
