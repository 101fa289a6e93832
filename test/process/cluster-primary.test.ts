/**
 * The cluster primary (WORKERS=2) as a real process tree: it keeps the port served whatever kills the workers,
 * gives up clearly only when workers cannot start, and one `/metrics` scrape shows the whole instance.
 * Also the single process's answer to a port that is taken.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import {
  CHAT_PATH,
  HEALTH_PATH,
  alive,
  bearer,
  chatRequestBody,
  freePort,
  httpCall,
  killAllGateways,
  logLines,
  removeTempDirs,
  spawnGateway,
  startGatewayProcess,
  type GatewayProcess,
} from '../helpers/spawn-gateway.js';

const TOKEN = 'cluster-primary-admin-token-0123456789';
/** EX_CONFIG (src/process/exit-codes.ts): the process can never start as configured. */
const EXIT_CANNOT_START = 78;

after(async () => {
  await killAllGateways();
  removeTempDirs();
});

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Pids of the workers whose start line is in the log and that are still alive. */
function liveWorkers(gw: GatewayProcess): number[] {
  const pids = logLines(gw.stdout())
    .filter((l) => l.msg === 'gateway started' && typeof l.worker === 'number' && typeof l.pid === 'number')
    .map((l) => l.pid as number);
  return [...new Set(pids)].filter(alive);
}

const healthy = async (gw: GatewayProcess): Promise<boolean> => {
  try {
    return (await httpCall(`${gw.url}${HEALTH_PATH}`, { timeoutMs: 1_000 })).status === 200;
  } catch {
    return false;
  }
};

/** The sum of `llmgw_requests_total` samples of route "chat" in a Prometheus text. */
function chatRequestsIn(text: string): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const match = /^llmgw_requests_total\{([^}]*)\} (\S+)$/.exec(line);
    if (match && /route="chat"/.test(match[1] ?? '')) total += Number(match[2]);
  }
  return total;
}

describe('WORKERS=2: the primary', () => {
  let mock: OpenAiUpstream;
  let gw: GatewayProcess;
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGatewayProcess({
      env: {
        GATEWAY_ENV: 'prod',
        ADMIN_TOKEN: TOKEN,
        UPSTREAM_BASE_URL: mock.baseUrl,
        WORKERS: '2',
        LOG_LEVEL: 'info',
        SHUTDOWN_GRACE_MS: '2000',
      },
    });
    await until('both workers to start', () => liveWorkers(gw).length === 2);
  });
  after(async () => {
    await gw.kill();
    await mock.close();
  });

  test('/metrics: every scrape counts the requests of both workers', { timeout: 60_000 }, async () => {
    const N = 24;
    const answers = await Promise.all(
      Array.from({ length: N }, () =>
        httpCall(`${gw.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: bearer(TOKEN, { 'content-type': 'application/json' }),
          body: chatRequestBody('gpt-4o-mini', false),
        }),
      ),
    );
    assert.deepEqual(
      answers.map((a) => a.status),
      Array.from({ length: N }, () => 200),
    );
    // Both workers served some of them (else a per-worker answer would look right by luck).
    await until('the access lines', () => logLines(gw.stdout()).filter((l) => l.route === 'chat').length >= N);
    const byWorker = new Set(
      logLines(gw.stdout())
        .filter((l) => l.route === 'chat')
        .map((l) => l.worker),
    );
    assert.equal(byWorker.size, 2, 'the chat calls were spread over both workers');

    // Each scrape is a new connection, so round-robin hands them to both workers in turn.
    const scrapedBy = new Set<unknown>();
    for (let i = 0; i < 6; i++) {
      const scrape = await httpCall(`${gw.url}/metrics`, { headers: bearer(TOKEN) });
      assert.equal(scrape.status, 200, scrape.text);
      assert.match(String(scrape.headers['content-type']), /^text\/plain/);
      assert.equal(
        chatRequestsIn(scrape.text),
        N,
        `scrape ${i + 1}:\n${scrape.text
          .split('\n')
          .filter((l) => l.startsWith('llmgw_requests_total'))
          .join('\n')}`,
      );
      // The histograms are summed too: N observations of the chat route.
      const count = /^llmgw_request_duration_seconds_count\{route="chat",model="gpt-4o-mini"\} (\d+)$/m.exec(
        scrape.text,
      );
      assert.equal(Number(count?.[1]), N);
    }
    await until(
      'the metrics access lines',
      () => logLines(gw.stdout()).filter((l) => l.route === 'metrics').length >= 6,
    );
    for (const line of logLines(gw.stdout()).filter((l) => l.route === 'metrics')) scrapedBy.add(line.worker);
    assert.equal(scrapedBy.size, 2, 'the scrapes were answered by both workers');
  });

  test(
    'SIGHUP to the primary reaches the workers (certificate reload) and ends nothing',
    { timeout: 30_000 },
    async () => {
      const workers = liveWorkers(gw);
      gw.signal('SIGHUP');
      await until(
        'both workers to log the SIGHUP',
        () => logLines(gw.stdout()).filter((l) => l.msg === 'SIGHUP: no TLS certificate to reload').length === 2,
      );
      assert.equal(gw.exitInfo(), undefined, `the primary exited: ${gw.stderr()}`);
      assert.deepEqual(liveWorkers(gw), workers);
      assert.equal(await healthy(gw), true);
    },
  );

  test(
    'kill -9 of both workers at once: the primary starts new ones and the same port answers again',
    { timeout: 60_000 },
    async () => {
      for (let round = 1; round <= 2; round++) {
        const victims = liveWorkers(gw);
        assert.equal(victims.length, 2, `round ${round}: two workers to kill`);
        for (const pid of victims) process.kill(pid, 'SIGKILL');
        await until(`round ${round}: the killed workers to be gone`, () => victims.every((pid) => !alive(pid)));
        await until(
          `round ${round}: two new workers`,
          () => liveWorkers(gw).filter((pid) => !victims.includes(pid)).length === 2,
        );
        assert.equal(gw.exitInfo(), undefined, `the primary exited: ${gw.stderr()}`);
        await until(`round ${round}: health on the same port`, () => healthy(gw));
        const chat = await httpCall(`${gw.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: bearer(TOKEN, { 'content-type': 'application/json' }),
          body: chatRequestBody('gpt-4o-mini', false),
        });
        assert.equal(chat.status, 200, chat.text);
      }
      assert.ok(logLines(gw.stdout()).filter((l) => l.msg === 'worker died; starting a new one').length >= 4);
    },
  );
});

describe('start failures', () => {
  let holder: Server;
  let takenPort: number;
  before(async () => {
    takenPort = await freePort();
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(takenPort, '127.0.0.1', resolve));
  });
  after(() => new Promise<void>((resolve) => holder.close(() => resolve())));

  for (const workers of ['1', '2']) {
    test(
      `a taken port (WORKERS=${workers}): one message naming the address and PORT, no stack, a non-zero exit`,
      { timeout: 30_000 },
      async () => {
        const gw = await spawnGateway({
          port: takenPort,
          env: { GATEWAY_ENV: 'prod', ADMIN_TOKEN: TOKEN, WORKERS: workers },
        });
        try {
          const exit = await gw.waitForExit(20_000);
          assert.deepEqual(exit, { code: EXIT_CANNOT_START, signal: null }, gw.stderr());
          assert.match(
            gw.stderr(),
            new RegExp(`cannot listen on 127\\.0\\.0\\.1:${takenPort}: port ${takenPort} is already in use`),
          );
          assert.match(gw.stderr(), /Set PORT to a free port/);
          assert.doesNotMatch(gw.stderr(), /\n\s+at /, 'no stack trace');
          assert.doesNotMatch(gw.stderr(), /EADDRINUSE|Error:/);
          if (workers === '2') {
            assert.match(gw.stderr(), /a worker cannot start/);
            // It gave up at the first such worker, without forking replacements that would fail the same way.
            assert.equal(logLines(gw.stdout()).filter((l) => l.msg === 'worker died; starting a new one').length, 0);
          }
        } finally {
          await gw.kill();
        }
      },
    );
  }

  test(
    'WORKERS=2 whose workers die before listening: retried with growing delays, then one clear message and exit 1',
    { timeout: 60_000 },
    async () => {
      // A PostgreSQL that refuses connections: each worker fails while opening its usage store, before listen.
      const closed = await freePort();
      const gw = await spawnGateway({
        env: {
          GATEWAY_ENV: 'prod',
          ADMIN_TOKEN: TOKEN,
          WORKERS: '2',
          DATABASE_URL: `postgres://postgres@127.0.0.1:${closed}/test`,
        },
      });
      try {
        const exit = await gw.waitForExit(50_000);
        assert.deepEqual(exit, { code: 1, signal: null }, gw.stderr());
        assert.match(gw.stderr(), /6 workers in a row died before they could listen; giving up/);
        const delays = logLines(gw.stdout())
          .filter((l) => l.msg === 'worker died; starting a new one')
          .map((l) => l.respawn_in_ms);
        assert.deepEqual(delays, [500, 1000, 2000, 4000, 8000], 'backs off');
      } finally {
        await gw.kill();
      }
    },
  );
});
