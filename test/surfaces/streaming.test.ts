import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { request } from 'undici';
import { MOCK_STREAM_ERROR, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, CHAT_PATH, authHeaders, chatBody, useGateway } from '../helpers/gateway.js';
import { assembleContent, dataFrames, readStream } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait.js';

const STREAM_BODY = chatBody({ stream: true });
const chunkJson = (content: string, extra = '') =>
  `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini"${extra},"choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"finish_reason":null}]}`;

describe('chat route, streamed', () => {
  const fixture = useGateway({
    env: { UPSTREAM_API_KEY: 'sk-stream-test-upstream-key', UPSTREAM_IDLE_TIMEOUT_MS: '300' },
    // A 429 test below must not pause the upstream for the tests after it (pauses: upstream-pauses.test.ts).
    configFile: {
      name: 'no-pause.yaml',
      text: 'limits:\n  upstream_pause_max_seconds: 0\ncircuit_breaker:\n  failure_threshold: 1000\n',
    },
  });

  const url = () => `${fixture.gw.url}${CHAT_PATH}`;

  test('re-emits each upstream chunk as one normalized SSE event and ends with [DONE], byte for byte', async () => {
    // The upstream uses CRLF, a comment, a multi-line data field and a chunk without "object"; our output is uniform.
    fixture.mock.enqueue({
      kind: 'stream',
      chunks: [
        `data: ${chunkJson('Hel')}\r\n\r\n`,
        ': keep-alive comment\n\n',
        `data: {"id":"chatcmpl-1","object":"chat.completion.chunk",\ndata: "created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}\n\n`,
        `data: {"id":"chatcmpl-1","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n`,
        'data: [DONE]\n\n',
      ],
    });
    const answer = await readStream(url(), STREAM_BODY, authHeaders());
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(answer.headers['cache-control'], 'no-cache, no-transform');
    const expected =
      `data: ${chunkJson('Hel')}\n\n` +
      `data: ${JSON.stringify(JSON.parse(`{"id":"chatcmpl-1","object":"chat.completion.chunk",\n"created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}`))}\n\n` +
      `data: {"id":"chatcmpl-1","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"object":"chat.completion.chunk"}\n\n` +
      'data: [DONE]\n\n';
    assert.equal(answer.text, expected);
    assert.equal(assembleContent(answer.text), 'Hello');
    assert.equal((fixture.mock.chatRequests()[0]?.json as { stream?: boolean }).stream, true);
  });

  test('multi-byte characters split across TCP packets arrive intact', async () => {
    const frame = Buffer.from(`data: ${chunkJson('héllo 👋 世界')}\n\n`);
    const cut = frame.indexOf(Buffer.from('👋')) + 2; // in the middle of the emoji's four bytes
    fixture.mock.enqueue({
      kind: 'raw',
      handler: (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        res.write(frame.subarray(0, cut));
        setTimeout(() => {
          res.write(frame.subarray(cut));
          res.end('data: [DONE]\n\n');
        }, 20);
      },
    });
    const answer = await readStream(url(), STREAM_BODY, authHeaders());
    assert.equal(assembleContent(answer.text), 'héllo 👋 世界');
    assert.ok(answer.text.endsWith('data: [DONE]\n\n'));
  });

  test('tool-call deltas stream through unchanged', async () => {
    fixture.mock.enqueue({ kind: 'stream' });
    const body = chatBody({
      stream: true,
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
    });
    const answer = await readStream(url(), body, authHeaders());
    const args = dataFrames(answer.text)
      .filter((d) => d.startsWith('{'))
      .map(
        (d) =>
          (
            JSON.parse(d) as {
              choices: Array<{ delta: { tool_calls?: Array<{ function?: { arguments?: string } }> } }>;
            }
          ).choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '',
      )
      .join('');
    assert.equal(args, '{"location":"Paris"}');
    assert.ok(answer.text.endsWith('data: [DONE]\n\n'));
  });

  test('an upstream error before the stream starts is a plain JSON error with its status', async () => {
    fixture.mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '7' } });
    const answer = await readStream(url(), STREAM_BODY, authHeaders());
    assert.equal(answer.status, 429);
    assert.equal(answer.headers['retry-after'], '7');
    assert.match(String(answer.headers['content-type']), /^application\/json/);
    assert.equal((JSON.parse(answer.text) as { code: string }).code, 'upstream_rate_limited');
  });

  const midStreamFailures: Array<{ name: string; behavior: Parameters<OpenAiUpstream['enqueue']>[0]; code: string }> = [
    { name: 'a connection reset', behavior: { kind: 'reset', afterChunks: 2 }, code: 'upstream_connection_reset' },
    { name: 'a malformed frame', behavior: { kind: 'malformed', afterChunks: 2 }, code: 'upstream_stream_malformed' },
    {
      name: 'an error event from the provider',
      behavior: { kind: 'stream-error-event', afterChunks: 2 },
      code: 'upstream_stream_error',
    },
    { name: 'a stall (idle timeout)', behavior: { kind: 'stall', afterChunks: 2 }, code: 'upstream_idle_timeout' },
    {
      name: 'an end without [DONE]',
      behavior: { kind: 'stream', content: ['a', 'b'], done: false },
      code: 'upstream_stream_truncated',
    },
  ];
  for (const failure of midStreamFailures) {
    test(`${failure.name} mid-stream ends with one error event and never [DONE]`, async () => {
      fixture.mock.enqueue(failure.behavior);
      const answer = await readStream(url(), STREAM_BODY, authHeaders());
      assert.equal(answer.status, 200);
      assert.ok(!answer.text.includes('data: [DONE]'), `a failed stream must not look complete: ${answer.text}`);
      const frames = answer.text.split('\n\n').filter(Boolean);
      const last = frames[frames.length - 1] ?? '';
      assert.match(last, /^event: error\ndata: /);
      assert.equal(frames.filter((f) => f.startsWith('event: error')).length, 1);
      const error = JSON.parse(last.split('\n')[1]?.slice(6) ?? '') as {
        code: string;
        message: string;
        details: Record<string, unknown>;
      };
      assert.equal(error.code, failure.code);
      assert.equal(typeof error.message, 'string');
      assert.equal(error.details.upstream, 'default');
      assert.ok(
        assembleContent(frames.slice(0, -1).join('\n\n') + '\n\n').length > 0,
        'content before the failure was delivered',
      );
      if (failure.code === 'upstream_stream_error') {
        assert.equal(error.details.upstream_message, MOCK_STREAM_ERROR.error.message);
      }
      await waitFor(
        `the access line with ${failure.code}`,
        () => fixture.gw.logLines.some((l) => l.includes(`"code":"${failure.code}"`) && l.includes('"msg":"request"')),
        3000,
      );
    });
  }

  test('a client that leaves mid-stream cancels the upstream stream', async () => {
    fixture.mock.enqueue({ kind: 'stall', afterChunks: 1 });
    const aborter = new AbortController();
    const response = await request(url(), {
      method: 'POST',
      headers: authHeaders(),
      body: STREAM_BODY,
      signal: aborter.signal,
    });
    for await (const chunk of response.body) {
      if ((chunk as Buffer).length > 0) break;
    }
    aborter.abort();
    const received = fixture.mock.chatRequests()[0];
    assert.ok(received);
    assert.equal(await Promise.race([received.aborted, sleep(2000).then(() => 'timeout')]), true);
    await waitFor(
      'the 499 access line',
      () => fixture.gw.logLines.some((l) => l.includes('"status":499') && l.includes('client_closed_request')),
      3000,
    );
  });

  test('a slow reader holds the upstream back (backpressure) instead of growing memory', async () => {
    const frame = `data: ${chunkJson('x'.repeat(1000))}\n\n`;
    const total = 200_000; // ~200 MB if it were all buffered
    let written = 0;
    let upstreamClosed = false;
    fixture.mock.enqueue({
      kind: 'raw',
      handler: (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.on('close', () => {
          upstreamClosed = true;
        });
        const pump = () => {
          while (written < total && !res.destroyed) {
            written++;
            if (!res.write(frame)) return void res.once('drain', pump);
          }
          if (!res.destroyed) res.end('data: [DONE]\n\n');
        };
        pump();
      },
    });
    // A raw socket that sends the request and then reads nothing.
    const socket = connect(fixture.gw.port, '127.0.0.1');
    socket.pause();
    const payload = STREAM_BODY;
    socket.write(
      `POST ${CHAT_PATH} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${ADMIN_TOKEN}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
    );
    await sleep(1500);
    const heapMb = process.memoryUsage().heapUsed / 1e6;
    const writtenMb = (written * frame.length) / 1e6;
    socket.destroy();
    assert.ok(writtenMb < 40, `upstream wrote ${writtenMb.toFixed(1)} MB while the client read nothing`);
    assert.ok(written < total);
    assert.ok(heapMb < 400, `heap ${heapMb.toFixed(0)} MB`);
    await waitFor('the upstream connection closed', () => upstreamClosed, 3000);
  });
});

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
