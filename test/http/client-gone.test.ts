/**
 * A caller that hangs up at any moment — before the handler ran, while the first chunk was on its way, right as
 * the stream started — must leave nothing held: not its concurrency slot, not its idempotency key.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../helpers/gateway.js';
import { readStream } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait.js';

describe('a caller that hangs up at any moment leaves nothing held', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  before(async () => {
    mock = await startOpenAiUpstream();
    mock.defaultBehavior = { kind: 'stream', delayMs: 2 };
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl },
      configFile: { name: 'one-at-a-time.yaml', text: 'limits:\n  caller:\n    concurrent: 1\n' },
    });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  /** Sends a whole streamed chat request on a raw socket and destroys the socket `afterMs` later (0: at once). */
  function sendAndHangUp(afterMs: number, key: string): Promise<void> {
    return new Promise((resolve) => {
      const body = chatBody({ stream: true });
      const socket = connect(gw.port, '127.0.0.1', () => {
        socket.write(
          `POST ${CHAT_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: application/json\r\n` +
            `Idempotency-Key: ${key}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        // A TCP reset, not a FIN: a FIN leaves the server's side open until it writes, a reset closes it at once.
        if (afterMs === 0) socket.resetAndDestroy();
        else setTimeout(() => socket.resetAndDestroy(), afterMs);
      });
      socket.on('error', () => undefined);
      socket.on('close', () => resolve());
    });
  }

  test(
    'forty hang-ups at different moments: the one concurrency slot and every key are free again',
    { timeout: 30_000 },
    async () => {
      const keys: string[] = [];
      for (let i = 0; i < 40; i++) {
        const key = `gone-${i}`;
        keys.push(key);
        await sendAndHangUp(i % 8, key);
      }
      // Every hang-up is settled once a normal call is admitted again (one slot: any leak keeps it at 429).
      await waitFor('a call admitted again', async () => {
        const answer = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders());
        return answer.status === 200;
      });
      // No key is left claimed: each runs again (200), none is "in progress" (409).
      for (const key of keys) {
        const answer = await readStream(
          `${gw.url}${CHAT_PATH}`,
          chatBody({ stream: true }),
          authHeaders({ 'idempotency-key': key }),
        );
        assert.notEqual(answer.status, 409, `${key} is still claimed`);
        assert.equal(answer.status, 200, `${key}: ${answer.text.slice(0, 200)}`);
      }
    },
  );
});
