/**
 * A batch whose process is killed (SIGKILL) resumes as soon as the same gateway starts again on the same data
 * folder (issue 41): the new process has the same instance identity (host name and data folder here; INSTANCE_ID
 * when set) and takes back at once the leases its dead predecessor held, instead of waiting `lease_seconds` (60
 * here, the default) for them to run out. A live sibling's lease is never taken (runner-identity.ts): the unit
 * checks below, and test/core/batches/batches-restart.test.ts (two processes on one data folder, no line run twice).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import {
  alive,
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
} from '../../helpers/spawn-gateway.js';
import { chatBatchLines, createChatBatch } from '../../helpers/batch-fixtures.js';
import { waitFor, waitForValue } from '../../helpers/wait.js';
import { isDeadPredecessor, runnerName } from '../../../src/core/batches/runner-identity.js';

const TOKEN = 'batch-lease-takeback-admin-token-0123456789';
const LINES = 200;

describe('a batch after kill -9 and a restart on the same data folder', () => {
  let mock: OpenAiUpstream;
  let configFile: string;
  let dataDir: string;
  const env = () => ({
    GATEWAY_ENV: 'prod',
    ADMIN_TOKEN: TOKEN,
    UPSTREAM_BASE_URL: mock.baseUrl,
    GATEWAY_CONFIG: configFile,
    LOG_LEVEL: 'info',
  });
  before(async () => {
    mock = await startOpenAiUpstream();
    // Each line takes 30 ms upstream: the batch is mid-way when the process is killed.
    mock.defaultBehavior = { kind: 'json', delayMs: 30 };
    dataDir = makeTempDir('gw-lease-takeback-');
    configFile = join(dataDir, 'gateway.yaml');
    // lease_seconds is the default (60): waiting it out would fail the test's bound.
    writeFileSync(
      configFile,
      ['usage:', '  enabled: false', 'batches:', '  concurrency: 2', '  poll_ms: 50'].join('\n'),
    );
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
    await mock.close();
  });

  test(
    'the restarted process takes its lease back at once: the batch resumes in seconds',
    { timeout: 90_000 },
    async () => {
      let gw: GatewayProcess = await startGatewayProcess({ env: env(), dataDir });
      const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: TOKEN, maxRetries: 0 });
      const jsonl = chatBatchLines(
        LINES,
        (i) => `line-${i}`,
        (i) => `n${i}`,
      );
      const created = await createChatBatch(client(gw.url), jsonl, 'in.jsonl');
      await waitFor('20 lines at the upstream', () => mock.chatRequests().length >= 20, 30_000);
      const pid = gw.child.pid ?? 0;
      gw.signal('SIGKILL');
      await gw.waitForExit(10_000);
      assert.equal(alive(pid), false);
      const atKill = mock.chatRequests().length;
      assert.ok(atKill < LINES, 'the batch was cut');

      const restartedAt = Date.now();
      gw = await startGatewayProcess({ env: env(), dataDir });
      // Well under the 60 s lease: the batch is taken back at start, not after the dead process's lease ran out.
      await waitFor('lines running again after the restart', () => mock.chatRequests().length > atKill + 2, 15_000);
      const resumedMs = Date.now() - restartedAt;
      assert.ok(resumedMs < 15_000, `resumed after ${resumedMs} ms`);
      const ended = await waitForValue(
        'the batch to complete',
        () => client(gw.url).batches.retrieve(created.id),
        (b) => b.status === 'completed',
        30_000,
      );
      assert.deepEqual(ended.request_counts, { total: LINES, completed: LINES, failed: 0 });
      assert.ok(gw.stdout().includes('took back the leases a dead process of this instance held'), 'logged');
      await gw.kill();
    },
  );
});

describe('runner identity: whose leases are taken back', () => {
  const me = runnerName('host-a:/data', 4242);
  const other = runnerName('host-b:/data', 4242);
  const sibling = (pid: number) => runnerName('host-a:/data', pid).holder;
  const exists = (pid: number) => pid === 5000; // 5000 is a live sibling; any other pid is gone

  test('a dead process of the same identity: taken back', () => {
    assert.equal(isDeadPredecessor(sibling(6000), me, 4242, exists), true);
  });
  test('an earlier process with this very pid in this pid namespace (pid 1 again): taken back', () => {
    assert.equal(
      isDeadPredecessor(sibling(4242), me, 4242, () => true),
      true,
    );
  });
  test('a live sibling (cluster worker, another process on the folder): left alone', () => {
    assert.equal(isDeadPredecessor(sibling(5000), me, 4242, exists), false);
  });
  test("another identity's lease, this runner's own, an unparsable name, or no identity: left alone", () => {
    assert.equal(isDeadPredecessor(other.holder, me, 4242, exists), false);
    assert.equal(isDeadPredecessor(me.holder, me, 4242, exists), false);
    assert.equal(isDeadPredecessor(`${me.prefix ?? ''}x_y`, me, 4242, exists), false);
    assert.equal(
      isDeadPredecessor(`${me.prefix ?? ''}0_${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}`, me, 4242, exists),
      false,
    );
    const anonymous = runnerName(undefined);
    assert.equal(anonymous.prefix, undefined);
    assert.equal(isDeadPredecessor(sibling(6000), anonymous, 4242, exists), false);
  });
});
