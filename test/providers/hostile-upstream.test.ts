/**
 * An upstream is untrusted: what it sends may be endless, huge or full of the keys it was given. Each case is a
 * real misbehaving node:http upstream in front of the real gateway; the assertions are on the caller's bytes, the
 * gateway's log lines and what the upstream saw of the connection.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import type { Behavior } from '../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, useGateway } from '../helpers/gateway.js';
import { dataFrames, readStream } from '../helpers/sse-client.js';

const CONFIGURED_KEY = 'sk-hostile-configured-0123456789abcdefXYZ';
const CALLER_KEY = 'sk-hostile-caller-key-9876543210zyxwvuTSR';
const SSE_LIMIT = 4 * 1024 * 1024;
/** The most a hostile test upstream writes, so a gateway that fails to cut it still ends the test. */
const WRITE_CAP = 24 * 1024 * 1024;

const chunk = (content: string) =>
  `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"finish_reason":null}]}\n\n`;

/** Writes `prefix`, then `piece` again and again (respecting backpressure) until the gateway hangs up or the cap. */
function endless(prefix: string[], piece: string): Behavior {
  return {
    kind: 'raw',
    handler: (_req, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const part of prefix) res.write(part);
      let written = 0;
      const pump = (): void => {
        while (!res.destroyed && written < WRITE_CAP) {
          written += piece.length;
          if (!res.write(piece)) {
            res.once('drain', pump);
            return;
          }
        }
        if (!res.destroyed) res.end();
      };
      pump();
    },
  };
}

/** Every 8-character piece of `secret`: none may appear in an answer or a log line. */
function assertNoPieceOf(secret: string, text: string, where: string): void {
  for (let i = 0; i + 8 <= secret.length; i++) {
    const piece = secret.slice(i, i + 8);
    assert.ok(
      !text.includes(piece),
      `${where} contains ${JSON.stringify(piece)}, a piece of a key: ${text.slice(0, 600)}`,
    );
  }
}

describe('a hostile upstream', () => {
  const fixture = useGateway({
    env: { UPSTREAM_API_KEY: CONFIGURED_KEY },
    configFile: {
      name: 'no-breaker.yaml',
      text: 'limits:\n  upstream_pause_max_seconds: 0\ncircuit_breaker:\n  failure_threshold: 1000\n',
    },
  });
  const url = () => `${fixture.gw.url}${CHAT_PATH}`;

  describe('endless lines and events are cut at 4 MiB', () => {
    const cases = [
      {
        name: 'one data: line that never ends',
        prefix: 'data: ',
        piece: 'x'.repeat(64 * 1024),
        reason: /SSE line longer than 4194304 bytes/,
      },
      {
        name: 'data: lines with no blank line between them',
        prefix: '',
        piece: `data: ${'y'.repeat(16 * 1024)}\n`,
        reason: /SSE event longer than 4194304 bytes/,
      },
    ];
    for (const c of cases) {
      test(`${c.name}, before the first chunk: a JSON 502 upstream_stream_malformed and the upstream connection closed`, async () => {
        fixture.mock.enqueue(endless([c.prefix], c.piece));
        const answer = await readStream(url(), chatBody({ stream: true }), authHeaders());
        assert.equal(answer.status, 502, answer.text);
        const body = JSON.parse(answer.text) as {
          code: string;
          details: { reason: string; limit_bytes: number; upstream: string };
        };
        assert.equal(body.code, 'upstream_stream_malformed');
        assert.match(body.details.reason, c.reason);
        assert.equal(body.details.limit_bytes, SSE_LIMIT);
        assert.equal(await fixture.mock.chatRequests()[0]?.aborted, true, 'the gateway hung up on the upstream');
      });

      test(`${c.name}, after a first chunk: one final error event, no [DONE]`, async () => {
        fixture.mock.enqueue(endless([chunk('Hello'), c.prefix], c.piece));
        const answer = await readStream(url(), chatBody({ stream: true }), authHeaders());
        assert.equal(answer.status, 200);
        const frames = dataFrames(answer.text);
        assert.ok(frames[0]?.includes('"Hello"'), answer.text.slice(0, 300));
        assert.ok(!answer.text.includes('[DONE]'));
        assert.match(answer.text, /event: error\ndata: \{"code":"upstream_stream_malformed"/);
        const last = JSON.parse(frames.at(-1) ?? '{}') as { details?: { reason?: string; limit_bytes?: number } };
        assert.match(last.details?.reason ?? '', c.reason);
        assert.equal(last.details?.limit_bytes, SSE_LIMIT);
        assert.equal(await fixture.mock.chatRequests()[0]?.aborted, true);
      });
    }
  });

  describe('keys the upstream repeats back never reach the caller or the log', () => {
    /** An error body that puts the key (whole, behind "Bearer", and cut) in every field a provider has. */
    const echoingError = (key: string) => ({
      error: {
        // The key straddles the gateway's 2,000-character message cut: cutting before scrubbing left a piece.
        message: `${'m'.repeat(1990)}${key} was refused`,
        type: key,
        code: `Bearer ${key}`,
        param: `...${key.slice(0, 14)}`,
      },
    });

    const cases: Array<{ name: string; key: string; headers: Record<string, string> }> = [
      { name: 'the configured key', key: CONFIGURED_KEY, headers: {} },
      { name: "the caller's X-Upstream-Key", key: CALLER_KEY, headers: { 'x-upstream-key': CALLER_KEY } },
    ];
    for (const who of cases) {
      test(`an HTTP 500 echoing ${who.name} in message, type, code and param`, async () => {
        fixture.mock.enqueue({ kind: 'error', status: 500, body: echoingError(who.key) });
        const before = fixture.gw.logLines.length;
        const answer = await readStream(url(), chatBody(), authHeaders(who.headers));
        assert.equal(answer.status, 502);
        const body = JSON.parse(answer.text) as { code: string; details: Record<string, string> };
        assert.equal(body.code, 'upstream_error');
        assert.equal(body.details.upstream_type, '[REDACTED]');
        assert.equal(body.details.upstream_code, 'Bearer [REDACTED]');
        assert.equal(body.details.upstream_param, '...[REDACTED]');
        assert.equal(body.details.upstream_message?.length, 2000);
        assertNoPieceOf(who.key, answer.text, 'the answer');
        const log = fixture.gw.logLines.slice(before).join('\n');
        assert.match(log, /upstream_error/, 'the 5xx was logged');
        assertNoPieceOf(who.key, log, 'the log');
        assert.equal(
          fixture.mock.chatRequests()[0]?.headers.authorization,
          `Bearer ${who.key}`,
          'the key was the one sent',
        );
      });

      test(`a stream error event echoing ${who.name}`, async () => {
        fixture.mock.enqueue({
          kind: 'stream',
          chunks: [chunk('a'), `data: ${JSON.stringify(echoingError(who.key))}\n\n`],
        });
        const before = fixture.gw.logLines.length;
        const answer = await readStream(url(), chatBody({ stream: true }), authHeaders(who.headers));
        assert.equal(answer.status, 200);
        assert.match(answer.text, /event: error\ndata: \{"code":"upstream_stream_error"/);
        assert.match(answer.text, /"upstream_code":"Bearer \[REDACTED\]"/);
        assertNoPieceOf(who.key, answer.text, 'the stream');
        assertNoPieceOf(who.key, fixture.gw.logLines.slice(before).join('\n'), 'the log');
      });

      test(`a malformed frame whose preview would cut ${who.name} in half`, async () => {
        // The key starts 110 characters in: a 120-character preview cut first would keep its first 10.
        fixture.mock.enqueue({ kind: 'stream', chunks: [`data: {${'p'.repeat(109)}${who.key}\n\n`] });
        const before = fixture.gw.logLines.length;
        const answer = await readStream(url(), chatBody({ stream: true }), authHeaders(who.headers));
        assert.equal(answer.status, 502);
        const body = JSON.parse(answer.text) as { code: string; details: { frame_preview: string } };
        assert.equal(body.code, 'upstream_stream_malformed');
        assert.ok(body.details.frame_preview.startsWith(`{${'p'.repeat(109)}[REDACT`), body.details.frame_preview);
        assertNoPieceOf(who.key, answer.text, 'the answer');
        assertNoPieceOf(who.key, fixture.gw.logLines.slice(before).join('\n'), 'the log');
      });
    }
  });

  test('a 160 KB response header block is upstream_invalid_response that says so, not a connection reset', async () => {
    fixture.mock.enqueue({
      kind: 'raw',
      handler: (_req, res: ServerResponse) => {
        // Written on the socket itself: node:http would refuse to build such a header block.
        res.socket?.end(
          `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-big: ${'h'.repeat(160 * 1024)}\r\ncontent-length: 2\r\n\r\n{}`,
        );
      },
    });
    const answer = await readStream(url(), chatBody(), authHeaders());
    assert.equal(answer.status, 502, answer.text);
    const body = JSON.parse(answer.text) as { code: string; details: { reason: string } };
    assert.equal(body.code, 'upstream_invalid_response', answer.text);
    assert.match(body.details.reason, /headers/i);
  });

  test("an upstream 429's Retry-After reaches the caller as whole seconds, capped, however the upstream spelled it", async () => {
    // Pauses are off here (upstream_pause_max_seconds: 0), so the cap is the pause cap's default, 60 s.
    const cases: Array<[string | undefined, string]> = [
      ['-1', '1'],
      ['abc', '1'],
      ['1.5', '2'],
      ['7', '7'],
      ['99999999999', '60'],
      ['Thu, 01 Jan 2099 00:00:00 GMT', '60'],
      [undefined, '1'],
    ];
    for (const [sent, expected] of cases) {
      fixture.mock.enqueue({
        kind: 'raw',
        handler: (_req, res: ServerResponse) => {
          res.writeHead(429, {
            'content-type': 'application/json',
            ...(sent === undefined ? {} : { 'retry-after': sent }),
          });
          res.end('{"error":{"message":"slow down","type":"rate_limit_error"}}');
        },
      });
      const answer = await readStream(url(), chatBody(), authHeaders());
      assert.equal(answer.status, 429, answer.text);
      assert.equal(answer.headers['retry-after'], expected, `upstream Retry-After ${String(sent)}`);
      assert.equal((JSON.parse(answer.text) as { code: string }).code, 'upstream_rate_limited');
    }
  });
});
