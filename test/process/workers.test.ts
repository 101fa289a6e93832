/**
 * WORKERS=2: one cluster primary, two server processes sharing the port and the embedded SQLite file. The
 * limits and Idempotency-Key must hold across the workers exactly as across replicas sharing Redis.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import {
  CHAT_PATH,
  alive,
  bearer,
  httpCall,
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
} from '../helpers/spawn-gateway.js';

const TOKEN = 'workers-admin-token-0123456789';

interface LogLine {
  msg?: string;
  worker?: number;
  pid?: number;
  status?: number;
  route?: string;
}

function logLines(gw: GatewayProcess): LogLine[] {
  return gw
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** Worker pids from their start lines, by worker id. */
function workerPids(gw: GatewayProcess): Map<number, number> {
  const pids = new Map<number, number>();
  for (const line of logLines(gw))
    if (line.msg === 'gateway started' && line.worker !== undefined && line.pid !== undefined)
      pids.set(line.worker, line.pid);
  return pids;
}

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('WORKERS=2 on the embedded SQLite store', () => {
  let mock: OpenAiUpstream;
  let gw: GatewayProcess;
  before(async () => {
    mock = await startOpenAiUpstream();
    const configDir = makeTempDir('gw-workers-');
    const configFile = join(configDir, 'gateway.yaml');
    writeFileSync(
      configFile,
      'limits:\n  models:\n    limited-model:\n      requests: { limit: 10, window_seconds: 60 }\n',
    );
    gw = await startGatewayProcess({
      env: {
        GATEWAY_ENV: 'prod',
        ADMIN_TOKEN: TOKEN,
        UPSTREAM_BASE_URL: mock.baseUrl,
        GATEWAY_CONFIG: configFile,
        WORKERS: '2',
        LOG_LEVEL: 'info',
        SHUTDOWN_GRACE_MS: '2000',
      },
    });
    await until('both workers to start', () => workerPids(gw).size === 2);
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
    await mock.close();
  });

  const chat = (headers: Record<string, string> = {}, model = 'gpt-4o-mini') =>
    httpCall(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: bearer(TOKEN, { 'content-type': 'application/json', ...headers }),
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    });

  test(
    'a limit of 10 per minute lets 10 through in total over both workers, and both served',
    { timeout: 30_000 },
    async () => {
      mock.reset();
      const answers = await Promise.all(Array.from({ length: 30 }, () => chat({}, 'limited-model')));
      assert.equal(answers.filter((a) => a.status === 200).length, 10);
      assert.equal(answers.filter((a) => a.status === 429).length, 20);
      assert.equal(mock.chatRequests().length, 10);
      await until('the access log lines', () => logLines(gw).filter((l) => l.route === 'chat').length >= 30);
      const byWorker = new Set(
        logLines(gw)
          .filter((l) => l.route === 'chat')
          .map((l) => l.worker),
      );
      assert.deepEqual([...byWorker].sort(), [1, 2], 'connections were spread over both workers');
    },
  );

  test(
    '10 concurrent duplicates of one Idempotency-Key over both workers: one upstream call, then replays',
    { timeout: 30_000 },
    async () => {
      mock.reset();
      mock.enqueue({ kind: 'json', delayMs: 300 });
      const answers = await Promise.all(Array.from({ length: 10 }, () => chat({ 'idempotency-key': 'workers-key-1' })));
      assert.equal(mock.chatRequests().length, 1, 'one upstream call for the key across both workers');
      const statuses = answers.map((a) => a.status);
      assert.ok(
        statuses.every((s) => s === 200 || s === 409),
        `statuses ${statuses.join(',')}`,
      );
      assert.equal(statuses.filter((s) => s === 200).length >= 1, true);
      const replays = await Promise.all(Array.from({ length: 6 }, () => chat({ 'idempotency-key': 'workers-key-1' })));
      for (const replay of replays) {
        assert.equal(replay.status, 200);
        assert.equal(replay.headers['idempotent-replayed'], 'true');
        assert.equal(replay.text, replays[0]?.text);
      }
      assert.equal(mock.chatRequests().length, 1);
    },
  );

  test('a worker killed with SIGKILL is replaced; the gateway keeps answering', { timeout: 30_000 }, async () => {
    const before = workerPids(gw);
    const victim = before.get(1);
    assert.ok(victim !== undefined);
    process.kill(victim, 'SIGKILL');
    await until('a third worker to start', () => workerPids(gw).size === 3);
    await until('the killed worker to be gone', () => !alive(victim));
    const answers = await Promise.all(Array.from({ length: 6 }, () => chat()));
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 200, 200, 200, 200],
    );
    assert.ok(logLines(gw).some((l) => l.msg === 'worker died; starting a new one'));
  });

  test(
    'SIGTERM to the primary drains every worker and exits 0, leaving no process behind',
    { timeout: 30_000 },
    async () => {
      const pids = [...workerPids(gw).values()].filter(alive);
      assert.equal(pids.length, 2);
      gw.signal('SIGTERM');
      const exit = await gw.waitForExit(15_000);
      assert.deepEqual(exit, { code: 0, signal: null });
      for (const pid of pids) assert.equal(alive(pid), false, `worker ${pid} is gone`);
      assert.equal(logLines(gw).filter((l) => l.msg === 'stopped').length, 2, 'each worker drained');
    },
  );
});
