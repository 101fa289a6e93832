/**
 * What an upstream sends must never kill the gateway process. These run the real gateway process against a real
 * misbehaving upstream and then check that the same process (same pid, no exit) still answers.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { startOpenAiUpstream } from '../helpers/upstreams/openai.js';
import {
  CHAT_PATH,
  HEALTH_PATH,
  bearer,
  chatRequestBody,
  httpCall,
  jsonOf,
  killAllGateways,
  removeTempDirs,
  startGatewayProcess,
} from '../helpers/spawn-gateway.js';

const TIMEOUT = { timeout: 60_000 };
const ADMIN = 'hostile-upstream-admin-token-0123456789';
const JSON_HEADERS = { 'content-type': 'application/json' };

after(async () => {
  await killAllGateways();
  removeTempDirs();
});

/** First frames that end the stream before any chunk reached the caller, each followed by [DONE] and a close. */
const BAD_FIRST_FRAMES: ReadonlyArray<{ name: string; frame: string; code: string }> = [
  {
    name: 'an error object',
    frame: 'data: {"error":{"message":"upstream exploded","type":"server_error"}}\n\n',
    code: 'upstream_stream_error',
  },
  { name: 'an event: error', frame: 'event: error\ndata: {"message":"overloaded"}\n\n', code: 'upstream_stream_error' },
  { name: 'a malformed frame', frame: 'data: {broken\n\n', code: 'upstream_stream_malformed' },
  {
    name: 'a frame without choices',
    frame: 'data: {"id":"x","object":"chat.completion.chunk"}\n\n',
    code: 'upstream_stream_malformed',
  },
];

void describe('a bad first stream frame does not kill the process', () => {
  void test(
    'each bad first frame, three rounds: a JSON 502 every time, then the same process still answers',
    TIMEOUT,
    async () => {
      const mock = await startOpenAiUpstream();
      const badFrame = (frame: string) => ({
        kind: 'raw' as const,
        handler: (_req: unknown, res: ServerResponse) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(frame);
          res.write('data: [DONE]\n\n');
          // Close the connection after the body, as the reported upstream did.
          res.end(() => res.socket?.destroy());
        },
      });
      const gw = await startGatewayProcess({
        env: { GATEWAY_ENV: 'dev', ADMIN_TOKEN: ADMIN, UPSTREAM_BASE_URL: mock.baseUrl },
      });
      try {
        for (let round = 0; round < 3; round++) {
          for (const bad of BAD_FIRST_FRAMES) {
            // A good call after each bad one keeps the circuit breaker closed, so every bad frame reaches the upstream.
            mock.enqueue(badFrame(bad.frame), { kind: 'stream' });
            const answer = await httpCall(`${gw.url}${CHAT_PATH}`, {
              method: 'POST',
              headers: bearer(ADMIN, JSON_HEADERS),
              body: chatRequestBody('gpt-4o-mini', true),
            });
            assert.equal(answer.status, 502, `${bad.name}: ${answer.text}`);
            assert.equal(jsonOf(answer).code, bad.code, bad.name);
            const good = await httpCall(`${gw.url}${CHAT_PATH}`, {
              method: 'POST',
              headers: bearer(ADMIN, JSON_HEADERS),
              body: chatRequestBody('gpt-4o-mini', true),
            });
            assert.equal(good.status, 200, `${good.text} after ${mock.chatRequests().length} upstream calls`);
          }
        }
        // The crash came about a second after the answer: give the process the time it needed to die, by
        // waiting for a later condition (a normal chat answered twice, a second apart) rather than a sleep.
        const deadline = Date.now() + 2_500;
        let answered = 0;
        while (Date.now() < deadline) {
          const health = await httpCall(`${gw.url}${HEALTH_PATH}`);
          assert.equal(health.status, 200);
          answered++;
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
        assert.ok(answered > 3);
        mock.enqueue({ kind: 'stream' });
        const ok = await httpCall(`${gw.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: bearer(ADMIN, JSON_HEADERS),
          body: chatRequestBody('gpt-4o-mini', true),
        });
        assert.equal(ok.status, 200, ok.text);
        assert.ok(ok.text.endsWith('data: [DONE]\n\n'));
        assert.equal(gw.exitInfo(), undefined, `the gateway exited; stderr:\n${gw.stderr()}`);
        assert.doesNotMatch(gw.stderr(), /RequestAbortedError|uncaught/i);
      } finally {
        await gw.kill();
        await mock.close();
      }
    },
  );
});
