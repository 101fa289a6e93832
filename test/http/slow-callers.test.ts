/**
 * Callers that send slowly, or keep sending after they were refused, must not hold a connection: the whole
 * request (headers and body) has REQUEST_TIMEOUT_SECONDS, and an answer sent before the body was read closes
 * the connection. Real sockets, one byte at a time.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

interface Exchange {
  /** Everything the gateway wrote before the socket closed. */
  answer: string;
  /** ms from the first byte sent until the gateway closed the socket. */
  closedAfterMs: number;
}

/**
 * Sends `head`, then one more byte every `everyMs` for as long as the socket is open, and resolves when the
 * gateway closes it; rejects if it is still open after `giveUpMs` (the defect this file guards against).
 */
function dribble(port: number, head: string, options: { everyMs?: number; giveUpMs: number }): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    let answer = '';
    let ended = false;
    const drip = setInterval(() => {
      if (!socket.destroyed && socket.writable) socket.write('x');
    }, options.everyMs ?? 200);
    const giveUp = setTimeout(() => {
      clearInterval(drip);
      socket.destroy();
      reject(
        new Error(
          `the gateway still held the socket after ${options.giveUpMs} ms; it had answered: ${JSON.stringify(answer.slice(0, 300))}`,
        ),
      );
    }, options.giveUpMs);
    const finish = () => {
      if (ended) return;
      ended = true;
      clearInterval(drip);
      clearTimeout(giveUp);
      resolve({ answer, closedAfterMs: Date.now() - started });
    };
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('end', finish);
    socket.on('close', finish);
    socket.on('error', () => finish()); // a reset after the answer still means closed
    socket.write(head);
  });
}

function statusOf(raw: string): number {
  return Number(/^HTTP\/1\.1 (\d{3}) /.exec(raw)?.[1]);
}

function jsonOf(raw: string): {
  code?: string;
  message?: string;
  details?: Record<string, unknown>;
  error?: { message?: string; code?: string };
} {
  return JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as ReturnType<typeof jsonOf>;
}

/** Waits for the access line matching `match` (it is written when the request ends, after the socket closed). */
async function accessLine(
  gw: TestGateway,
  match: (line: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  for (let waited = 0; waited < 3000; waited += 20) {
    for (const text of gw.logLines) {
      const line = JSON.parse(text) as Record<string, unknown>;
      if (line.msg === 'request' && match(line)) return line;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no access line');
}

const post = (path: string, headers: string, length = 1000) =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${headers}\r\n{"model":`;

describe('a slow request times out (REQUEST_TIMEOUT_SECONDS=1)', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({ env: { UPSTREAM_BASE_URL: mock.baseUrl, REQUEST_TIMEOUT_SECONDS: '1' } });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  test('an authenticated chat body sent one byte at a time: 408 request_timeout (JSON, OpenAI error too), then closed', async () => {
    const { answer, closedAfterMs } = await dribble(
      gw.port,
      post('/v1/chat/completions', `Authorization: Bearer ${ADMIN_TOKEN}\r\n`),
      { giveUpMs: 6000 },
    );
    assert.equal(statusOf(answer), 408, answer);
    assert.match(answer, /connection: close/i);
    const body = jsonOf(answer);
    assert.equal(body.code, 'request_timeout');
    assert.equal(body.error?.code, 'request_timeout', "the drop-in path carries OpenAI's error object");
    assert.ok(closedAfterMs >= 900 && closedAfterMs < 3000, `closed after ${closedAfterMs} ms`);
    assert.equal(mock.chatRequests().length, 0);
    const line = await accessLine(gw, (l) => l.url === '/v1/chat/completions');
    assert.equal(line.status, 408);
    assert.equal(line.code, 'request_timeout');
    assert.ok(!gw.logLines.some((l) => l.includes('unexpected error')), 'a slow caller is not a bug of ours');
  });

  test('a caller that leaves in the middle of its body: logged 499, not an internal error', async () => {
    await new Promise<void>((resolve) => {
      const socket = connect(gw.port, '127.0.0.1');
      socket.write(post('/v1/?route=chat&left=1', `Authorization: Bearer ${ADMIN_TOKEN}\r\n`), () =>
        setTimeout(() => socket.destroy(), 100),
      );
      socket.on('close', () => resolve());
    });
    const line = await accessLine(gw, (l) => String(l.url).includes('left='));
    assert.equal(line.status, 499);
    assert.equal(line.code, 'client_closed_request');
    assert.ok(!gw.logLines.some((l) => l.includes('unexpected error')));
  });

  test('the same on our own path and on the dashboard login, which reads its body before any authentication', async () => {
    for (const path of ['/v1/?route=chat', '/dashboard/login']) {
      const head = path === '/v1/?route=chat' ? post(path, `Authorization: Bearer ${ADMIN_TOKEN}\r\n`) : post(path, '');
      const { answer, closedAfterMs } = await dribble(gw.port, head, { giveUpMs: 6000 });
      assert.equal(statusOf(answer), 408, `${path}: ${answer}`);
      assert.equal(jsonOf(answer).code, 'request_timeout');
      assert.ok(closedAfterMs < 3000, `${path}: closed after ${closedAfterMs} ms`);
    }
  });

  test('headers sent one byte at a time (slowloris) are cut too', async () => {
    const { answer, closedAfterMs } = await dribble(gw.port, 'GET /v1/?route=health HTTP/1.1\r\nHost: x\r\nX-Slow: ', {
      giveUpMs: 6000,
    });
    assert.equal(statusOf(answer), 408, answer);
    assert.equal(jsonOf(answer).code, 'request_timeout');
    assert.ok(closedAfterMs < 3000, `closed after ${closedAfterMs} ms`);
  });

  test('50 callers that send their headers and then go silent, their side left open: each gets its 408 and the gateway closes every socket (none left half-closed)', async () => {
    const server = gw.gateway.app.server;
    const openNow = () =>
      new Promise<number>((resolve, reject) =>
        server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      );
    const head = `POST /v1/?route=chat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`;
    const sockets = await Promise.all(
      Array.from(
        { length: 50 },
        () =>
          new Promise<{ socket: ReturnType<typeof connect>; answer: () => string }>((resolve) => {
            // allowHalfOpen: the peer never ends its own side, as a silent or hostile caller would not.
            const socket = connect({ port: gw.port, host: '127.0.0.1', allowHalfOpen: true });
            let text = '';
            socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
            socket.on('error', () => {});
            socket.write(head, () => resolve({ socket, answer: () => text }));
          }),
      ),
    );
    try {
      await waitFor('every silent caller answered 408', () => sockets.every((s) => statusOf(s.answer()) === 408), 6000);
      for (const s of sockets) assert.equal(jsonOf(s.answer()).code, 'request_timeout');
      // Before the fix the gateway only half-closed them: every socket stayed open for as long as the peer's side.
      await waitFor('the gateway holds none of those sockets', async () => (await openNow()) === 0, 5000);
    } finally {
      for (const s of sockets) s.socket.destroy();
    }
  });

  test('a request that arrives in time is not affected, and its connection is kept alive', async () => {
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    const request = `POST /v1/?route=chat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(gw.port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        // Two complete answers on one socket: keep-alive held across the first.
        if ((text.match(/HTTP\/1\.1 200 /g) ?? []).length === 2 && text.trimEnd().endsWith('}')) {
          socket.destroy();
          resolve(text);
        }
      });
      socket.on('error', reject);
      socket.write(request);
      setTimeout(() => socket.write(request), 1500); // after the timeout would have cut a request still arriving
      setTimeout(() => reject(new Error(`no second answer: ${text.slice(0, 300)}`)), 5000);
    });
    assert.doesNotMatch(answer, /connection: close/i);
  });
});

describe('an answer sent before the body was read closes the connection', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  before(async () => {
    mock = await startOpenAiUpstream();
    // A long request timeout: what closes these sockets must be the refusal, not the timeout.
    gw = await startGateway({ env: { UPSTREAM_BASE_URL: mock.baseUrl, REQUEST_TIMEOUT_SECONDS: '30' } });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  const cases = [
    { name: 'no token on chat: 401', head: post('/v1/?route=chat', ''), status: 401, code: 'authentication_required' },
    {
      name: 'a wrong token on the drop-in path: 401',
      head: post('/v1/chat/completions', 'Authorization: Bearer wrong-token-123456\r\n'),
      status: 401,
      code: 'invalid_token',
    },
    { name: 'an unknown path: 404', head: post('/nowhere', ''), status: 404, code: 'not_found' },
    {
      name: 'a declared body over the limit: 413',
      head: post('/v1/?route=chat', `Authorization: Bearer ${ADMIN_TOKEN}\r\n`, 50_000_000),
      status: 413,
      code: 'payload_too_large',
    },
    { name: 'a wrong method: 405', head: post('/v1/?route=models', ''), status: 405, code: 'method_not_allowed' },
  ];
  for (const c of cases) {
    test(`${c.name}, JSON, and the socket is closed at once while the caller keeps sending`, async () => {
      const { answer, closedAfterMs } = await dribble(gw.port, c.head, { giveUpMs: 5000 });
      assert.equal(statusOf(answer), c.status, answer);
      assert.match(answer, /connection: close/i);
      assert.equal(jsonOf(answer).code, c.code);
      assert.ok(closedAfterMs < 2000, `closed after ${closedAfterMs} ms`);
    });
  }

  test('a refusal of a request without a body keeps the connection (keep-alive is not broken)', async () => {
    const request = 'GET /v1/?route=models HTTP/1.1\r\nHost: x\r\n\r\n';
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(gw.port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if ((text.match(/HTTP\/1\.1 401 /g) ?? []).length === 2 && text.trimEnd().endsWith('}')) {
          socket.destroy();
          resolve(text);
        }
      });
      socket.on('close', () => reject(new Error(`closed after: ${text.slice(0, 300)}`)));
      socket.write(request + request);
    });
    assert.doesNotMatch(answer, /connection: close/i);
  });
});
