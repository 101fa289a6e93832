/**
 * An upstream's capacity (issue 18): on default settings nothing bounds the calls in flight, so hundreds of
 * concurrent streams all reach the provider at once; with a configured bound a call waits at most
 * queue_timeout_ms and is then refused with 503 upstream_busy — never a hidden queue that ends in a 504 blaming
 * the provider. Real sockets: the gateway app, a node:http upstream speaking OpenAI's SSE byte for byte, undici
 * clients.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { assembleContent, readStream } from '../../helpers/sse-client.js';
import { waitFor } from '../../helpers/wait.js';
import { UpstreamCapacity } from '../../../src/core/limits/upstream-capacity.js';
import { isGatewayError } from '../../../src/errors/gateway-error.js';
import { judgeFileLimit, readOpenFileLimit, streamsAllowed } from '../../../src/process/file-limit.js';
import { HEALTH_PATH, killAllGateways, removeTempDirs, startGatewayProcess } from '../../helpers/spawn-gateway.js';

const PIECES = ['Hello', ' from', ' a', ' held', ' stream'];
const CONTENT = PIECES.join('');
const AUTH = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
const CHAT = '/v1/chat/completions';

/** A provider that holds every chat call (headers unsent) until the test lets it answer: it sees them all at once. */
interface HoldingUpstream {
  baseUrl: string;
  /** Calls received and not yet answered. */
  held(): number;
  /** Chat calls received in all. */
  received(): number;
  /** Highest number of calls held at the same time. */
  peak(): number;
  /** Answers the `n` oldest held calls (all by default): an OpenAI SSE stream, or a chat.completion. */
  release(n?: number): void;
  close(): Promise<void>;
}

/** `headersAtOnce`: each call gets its SSE headers and first chunk on arrival, and only the rest is held. */
async function startHoldingUpstream(options: { headersAtOnce?: boolean } = {}): Promise<HoldingUpstream> {
  const waiting: Array<{ res: ServerResponse; stream: boolean; usage: boolean }> = [];
  const frame = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-held', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  let received = 0;
  let peak = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (part: string) => (body += part));
    req.on('end', () => {
      if (req.url === '/v1/models') {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end('{"object":"list","data":[{"id":"gpt-4o-mini","object":"model"}]}');
        return;
      }
      const json = JSON.parse(body) as { stream?: boolean; stream_options?: { include_usage?: boolean } };
      received += 1;
      if (options.headersAtOnce === true && json.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(frame({ role: 'assistant', content: '' }, null));
      }
      waiting.push({ res, stream: json.stream === true, usage: json.stream_options?.include_usage === true });
      peak = Math.max(peak, waiting.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const answer = ({ res, stream, usage }: { res: ServerResponse; stream: boolean; usage: boolean }) => {
    if (!stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-held',
          object: 'chat.completion',
          created: 1,
          model: 'gpt-4o-mini',
          choices: [{ index: 0, message: { role: 'assistant', content: CONTENT }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
        }),
      );
      return;
    }
    if (!res.headersSent) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(frame({ role: 'assistant', content: '' }, null));
    }
    for (const piece of PIECES) res.write(frame({ content: piece }, null));
    res.write(frame({}, 'stop'));
    if (usage)
      res.write(
        `data: ${JSON.stringify({ id: 'chatcmpl-held', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 } })}\n\n`,
      );
    res.end('data: [DONE]\n\n');
  };
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    held: () => waiting.length,
    received: () => received,
    peak: () => peak,
    release(n = waiting.length) {
      for (const held of waiting.splice(0, n)) answer(held);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const streamBody = JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] });
const jsonBody = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

async function health(
  gw: TestGateway,
): Promise<{ in_flight: number; queued: number; max_concurrent?: number } | undefined> {
  const answer = await call(`${gw.url}/v1/?route=health`, { headers: AUTH });
  return (
    answer.json as {
      checks: { upstreams: Record<string, { load?: { in_flight: number; queued: number; max_concurrent?: number } }> };
    }
  ).checks.upstreams.default?.load;
}

async function metricValue(gw: TestGateway, name: string): Promise<number | undefined> {
  const text = (await call(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name}{upstream="default"}`));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

after(async () => {
  await killAllGateways();
  removeTempDirs();
});

void describe('default settings: no hidden bound on an upstream', () => {
  void test('400 concurrent streams all reach the upstream at once and all complete', { timeout: 60_000 }, async () => {
    const N = 400;
    const upstream = await startHoldingUpstream();
    const gw = await startGateway({
      env: { UPSTREAM_BASE_URL: upstream.baseUrl, UPSTREAM_API_KEY: 'sk-capacity-test-key' },
    });
    try {
      // undici's global dispatcher opens one connection per concurrent call, as 400 separate callers would.
      const answers = Array.from({ length: N }, () => readStream(`${gw.url}${CHAT}`, streamBody, AUTH));
      // With the old default (128 connections per upstream) the 129th call waited unseen and this never held.
      await waitFor(`all ${N} calls held by the upstream at once`, () => upstream.held() === N, 20_000);
      assert.deepEqual(await health(gw), { in_flight: N, queued: 0 });
      assert.equal(await metricValue(gw, 'llmgw_upstream_in_flight'), N);
      upstream.release();
      const results = await Promise.all(answers);
      for (const [i, answer] of results.entries()) {
        assert.equal(answer.status, 200, `stream ${i}: ${answer.text.slice(0, 200)}`);
        assert.equal(assembleContent(answer.text), CONTENT, `stream ${i}`);
        assert.ok(answer.text.endsWith('data: [DONE]\n\n'), `stream ${i} ends with [DONE]`);
      }
      assert.equal(upstream.received(), N);
      assert.equal(upstream.peak(), N);
      assert.deepEqual(await health(gw), { in_flight: 0, queued: 0 });
    } finally {
      // The gateway's close waits for its calls in flight: the upstream ends them first (answers or cuts them).
      upstream.release();
      await upstream.close();
      await gw.close();
    }
  });
});

const boundedConfig = (baseUrl: string, extra: string) => ({
  name: 'gateway.yaml',
  text: [
    'upstreams:',
    '  - name: default',
    `    base_url: ${baseUrl}`,
    ...extra.split('\n').map((line) => `    ${line}`),
    'models:',
    '  - id: gpt-4o-mini',
    '    upstream: default',
  ].join('\n'),
});

void describe('a configured bound: a short visible wait, then 503 upstream_busy', () => {
  void test(
    'past max_concurrent a call waits queue_timeout_ms, then gets 503 upstream_busy with Retry-After and details',
    { timeout: 30_000 },
    async () => {
      const upstream = await startHoldingUpstream();
      const gw = await startGateway({
        configFile: boundedConfig(upstream.baseUrl, 'max_concurrent: 2\nqueue_timeout_ms: 300'),
      });
      try {
        const first = [
          readStream(`${gw.url}${CHAT}`, streamBody, AUTH),
          readStream(`${gw.url}${CHAT}`, streamBody, AUTH),
        ];
        await waitFor('two streams held', () => upstream.held() === 2);
        assert.deepEqual(await health(gw), { in_flight: 2, queued: 0, max_concurrent: 2 });

        const started = performance.now();
        const refused = await call(`${gw.url}${CHAT}`, { method: 'POST', headers: AUTH, body: jsonBody });
        const waited = performance.now() - started;
        assert.equal(refused.status, 503, refused.text);
        assert.equal(refused.headers['retry-after'], '1');
        // The drop-in path answers with our code and details, and OpenAI's error object alongside.
        assert.equal(refused.json.code, 'upstream_busy');
        assert.equal((refused.json as unknown as { error: { code: string } }).error.code, 'upstream_busy');
        assert.deepEqual(refused.json.details, {
          upstream: 'default',
          in_flight: 2,
          queued: 0,
          bound: 2,
          waited_ms: refused.json.details?.waited_ms,
          queue_timeout_ms: 300,
        });
        assert.ok((refused.json.details?.waited_ms as number) >= 299);
        assert.ok(waited >= 290 && waited < 5_000, `waited ${waited.toFixed(0)} ms`);
        // The refused call never reached the provider.
        assert.equal(upstream.received(), 2);

        // On /v1/?route=chat the same refusal is our own error shape.
        const native = await call(`${gw.url}/v1/?route=chat`, { method: 'POST', headers: AUTH, body: jsonBody });
        assert.equal(native.status, 503);
        assert.equal(native.json.code, 'upstream_busy');
        assert.equal(native.json.details?.bound, 2);

        // A queued call gets the slot a finished stream frees, within its wait.
        const queued = call(`${gw.url}${CHAT}`, { method: 'POST', headers: AUTH, body: jsonBody });
        await waitFor('one call queued', async () => (await health(gw))?.queued === 1);
        assert.equal(await metricValue(gw, 'llmgw_upstream_queued'), 1);
        upstream.release(1);
        await waitFor('the queued call reached the upstream', () => upstream.received() === 3);
        upstream.release();
        const late = await queued;
        assert.equal(late.status, 200, late.text);
        for (const answer of await Promise.all(first)) assert.equal(assembleContent(answer.text), CONTENT);
        assert.deepEqual(await health(gw), { in_flight: 0, queued: 0, max_concurrent: 2 });
      } finally {
        // The gateway's close waits for its calls in flight: the upstream ends them first (answers or cuts them).
        upstream.release();
        await upstream.close();
        await gw.close();
      }
    },
  );

  void test('time spent queued does not count against the first-byte timeout', { timeout: 30_000 }, async () => {
    const upstream = await startHoldingUpstream({ headersAtOnce: true });
    const gw = await startGateway({
      configFile: boundedConfig(
        upstream.baseUrl,
        'max_concurrent: 1\nqueue_timeout_ms: 5000\ntimeouts: { first_byte_ms: 400 }',
      ),
    });
    try {
      // The held stream gets its headers at once (its first byte is on time) and then keeps its slot.
      const holder = readStream(`${gw.url}${CHAT}`, streamBody, AUTH);
      await waitFor('one stream held', () => upstream.held() === 1);
      const queuedAt = performance.now();
      const queued = readStream(`${gw.url}${CHAT}`, streamBody, AUTH);
      await waitFor('one call queued', async () => (await health(gw))?.queued === 1);
      // The stimulus is time itself: the queued call waits for longer than first_byte_ms before its turn.
      await sleep(700);
      assert.equal((await health(gw))?.queued, 1, 'still queued after more than first_byte_ms');
      upstream.release(1);
      await waitFor('the queued call reached the upstream', () => upstream.held() === 1);
      upstream.release(1);
      const [a, b] = await Promise.all([holder, queued]);
      assert.ok(performance.now() - queuedAt > 700);
      assert.equal(a.status, 200, a.text);
      assert.equal(b.status, 200, b.text);
      assert.equal(assembleContent(b.text), CONTENT);
    } finally {
      // The gateway's close waits for its calls in flight: the upstream ends them first (answers or cuts them).
      upstream.release();
      await upstream.close();
      await gw.close();
    }
  });

  void test(
    'max_connections bounds the calls in flight the same way (no hidden queue in the pool)',
    { timeout: 30_000 },
    async () => {
      const upstream = await startHoldingUpstream();
      const gw = await startGateway({
        configFile: boundedConfig(upstream.baseUrl, 'max_connections: 1\nqueue_timeout_ms: 0'),
      });
      try {
        const holder = readStream(`${gw.url}${CHAT}`, streamBody, AUTH);
        await waitFor('one stream held', () => upstream.held() === 1);
        const refused = await call(`${gw.url}/v1/?route=chat`, { method: 'POST', headers: AUTH, body: jsonBody });
        assert.equal(refused.status, 503);
        assert.equal(refused.json.code, 'upstream_busy');
        assert.equal(refused.json.details?.bound, 1);
        assert.equal(refused.json.details?.waited_ms, 0);
        upstream.release();
        assert.equal((await holder).status, 200);
      } finally {
        // The gateway's close waits for its calls in flight: the upstream ends them first (answers or cuts them).
        upstream.release();
        await upstream.close();
        await gw.close();
      }
    },
  );

  void test('a busy upstream falls over to the next target, which answers', { timeout: 30_000 }, async () => {
    const busy = await startHoldingUpstream();
    const spare = await startHoldingUpstream();
    const gw = await startGateway({
      configFile: {
        name: 'gateway.yaml',
        text: [
          'upstreams:',
          '  - name: default',
          `    base_url: ${busy.baseUrl}`,
          '    max_concurrent: 1',
          '    queue_timeout_ms: 100',
          '  - name: spare',
          `    base_url: ${spare.baseUrl}`,
          'models:',
          '  - id: gpt-4o-mini',
          '    upstream: default',
          '    fallbacks: [{ upstream: spare }]',
        ].join('\n'),
      },
    });
    try {
      const holder = readStream(`${gw.url}${CHAT}`, streamBody, AUTH);
      await waitFor('one stream held', () => busy.held() === 1);
      const moved = call(`${gw.url}${CHAT}`, { method: 'POST', headers: AUTH, body: jsonBody });
      await waitFor('the call reached the spare', () => spare.held() === 1);
      spare.release();
      const answer = await moved;
      assert.equal(answer.status, 200, answer.text);
      assert.equal(busy.received(), 1);
      const metrics = (await call(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text;
      assert.match(metrics, /llmgw_upstream_failovers_total\{upstream="default",reason="busy"\} 1/);
      busy.release();
      assert.equal((await holder).status, 200);
    } finally {
      busy.release();
      spare.release();
      await busy.close();
      await spare.close();
      await gw.close();
    }
  });
});

void describe('UpstreamCapacity', () => {
  const never = new AbortController().signal;

  void test('without a bound every call gets a slot at once', () => {
    const capacity = new UpstreamCapacity('u', { bound: undefined, queueTimeoutMs: 0 });
    for (let i = 0; i < 10_000; i++) assert.equal(capacity.tryAcquire(), true);
    assert.deepEqual(capacity.load(), { inFlight: 10_000, queued: 0, bound: undefined });
    for (let i = 0; i < 10_000; i++) capacity.release();
    assert.deepEqual(capacity.load(), { inFlight: 0, queued: 0, bound: undefined });
  });

  void test('freed slots go to the waiters in arrival order; a newcomer does not jump the queue', async () => {
    const capacity = new UpstreamCapacity('u', { bound: 1, queueTimeoutMs: 10_000 });
    assert.equal(capacity.tryAcquire(), true);
    const order: number[] = [];
    const waits = [1, 2, 3].map((n) => capacity.wait(never).then(() => order.push(n)));
    assert.equal(capacity.tryAcquire(), false, 'a slot is not taken past the waiters');
    assert.deepEqual(capacity.load(), { inFlight: 1, queued: 3, bound: 1 });
    capacity.release();
    capacity.release();
    capacity.release();
    await Promise.all(waits);
    assert.deepEqual(order, [1, 2, 3]);
    assert.deepEqual(capacity.load(), { inFlight: 1, queued: 0, bound: 1 });
  });

  void test('a waiter whose call is cancelled leaves the queue with the cancellation, and its slot goes to the next', async () => {
    const capacity = new UpstreamCapacity('u', { bound: 1, queueTimeoutMs: 10_000 });
    capacity.tryAcquire();
    const controller = new AbortController();
    const cancelled = capacity.wait(controller.signal);
    const next = capacity.wait(never);
    controller.abort(new Error('caller left'));
    await assert.rejects(cancelled, /caller left/);
    assert.equal(capacity.load().queued, 1);
    capacity.release();
    await next;
    assert.deepEqual(capacity.load(), { inFlight: 1, queued: 0, bound: 1 });
  });

  void test('queue_timeout_ms 0 refuses at once; a timed-out waiter gets upstream_busy', async () => {
    const capacity = new UpstreamCapacity('u', { bound: 1, queueTimeoutMs: 0 });
    capacity.tryAcquire();
    const error: unknown = await capacity.wait(never).catch((e: unknown) => e);
    assert.ok(isGatewayError(error) && error.code === 'upstream_busy' && error.status === 503);
    const timed = new UpstreamCapacity('u', { bound: 1, queueTimeoutMs: 20 });
    timed.tryAcquire();
    const late: unknown = await timed.wait(never).catch((e: unknown) => e);
    assert.ok(isGatewayError(late) && late.code === 'upstream_busy');
    assert.equal(late.details.in_flight, 1);
    assert.ok((late.details.waited_ms as number) >= 19);
    assert.deepEqual(timed.load(), { inFlight: 1, queued: 0, bound: 1 });
  });

  void test('thousands of waiters that give up while no slot frees do not pile up', async () => {
    const capacity = new UpstreamCapacity('u', { bound: 1, queueTimeoutMs: 10_000 });
    capacity.tryAcquire();
    for (let round = 0; round < 20; round++) {
      const controllers = Array.from({ length: 500 }, () => new AbortController());
      const waits = controllers.map((c) => capacity.wait(c.signal).catch(() => undefined));
      for (const c of controllers) c.abort(new Error('gone'));
      await Promise.all(waits);
    }
    assert.equal(capacity.load().queued, 0);
    // What is left of 10,000 given-up waiters in the queue stays small (swept as they outnumber the live ones).
    const queue = (capacity as unknown as { waiting: unknown[]; head: number }).waiting;
    assert.ok(queue.length < 200, `queue holds ${queue.length}`);
    const last = capacity.wait(never);
    capacity.release();
    await last;
  });
});

void describe('the open-file limit', () => {
  void test(
    'is read from /proc/self/limits (Node raises the soft limit to the hard one at start)',
    { skip: process.platform !== 'linux' },
    () => {
      const limit = readOpenFileLimit();
      assert.ok(limit && limit.soft > 0 && limit.soft === limit.hard, JSON.stringify(limit));
      assert.deepEqual(
        readOpenFileLimit('Max open files            1024                 unlimited            files\n'),
        { soft: 1024, hard: Infinity },
      );
      assert.equal(readOpenFileLimit('nothing here'), undefined);
    },
  );

  void test('the verdict: two descriptors per stream; a warning when the bounds (or no bound) ask for more', () => {
    assert.equal(streamsAllowed(20_000), 9_872);
    assert.equal(judgeFileLimit({ soft: 20_000, hard: 20_000 }, [undefined]).warning, undefined);
    assert.equal(judgeFileLimit({ soft: 1_000, hard: 1_000 }, [100, 200]).warning, undefined);
    const short = judgeFileLimit({ soft: 1_024, hard: 1_024 }, [undefined]);
    assert.equal(short.streams, 384);
    assert.match(
      short.warning ?? '',
      /allows about 384 concurrent streams per process .* an upstream has no bound .* The hard limit is 1024 too/,
    );
    assert.match(judgeFileLimit({ soft: 1_024, hard: 1_024 }, [300, 300]).warning ?? '', /bounds add up to 600/);
  });

  void test(
    'a gateway started under a low limit says so once, at start',
    { timeout: 30_000, skip: process.platform !== 'linux' },
    async () => {
      const gw = await startGatewayProcess({
        wrapper: ['prlimit', '--nofile=700:700', '--'],
        env: {
          GATEWAY_ENV: 'dev',
          ADMIN_TOKEN: 'file-limit-admin-token-0123456789',
          UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1',
        },
      });
      try {
        const health = await call(`${gw.url}${HEALTH_PATH}`);
        assert.equal(health.status, 200);
        const said = () =>
          gw
            .stdout()
            .split('\n')
            .filter((l) => l.includes('open-file limit') || l.includes('EMFILE'));
        // Log lines are batched and flushed within a second: wait for the start line, which follows the warning.
        await waitFor('the start line in the log', () => gw.stdout().includes('gateway started'));
        const lines = said();
        assert.equal(lines.length, 1, gw.stdout());
        const line = JSON.parse(lines[0] as string) as {
          level: number;
          open_files_soft: number;
          streams_per_process: number;
          msg: string;
        };
        assert.equal(line.level, 40);
        assert.equal(line.open_files_soft, 700);
        assert.equal(line.streams_per_process, 222);
        assert.match(line.msg, /allows about 222 concurrent streams per process/);
      } finally {
        await gw.kill();
      }
    },
  );
});
