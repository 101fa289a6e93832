/**
 * Two live gateways on one data folder, each in its own pid namespace (two containers sharing a volume and the
 * host's name: `--uts=host`, host networking), have the same instance identity (host name + DATA_DIR) and the
 * same pid (1). The second must not take the first one's lease back as a dead predecessor's (runner-identity.ts):
 * the batch would run on both, its lines sent upstream twice (billed twice). Real processes under `unshare`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import {
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
} from '../../helpers/spawn-gateway.js';
import { chatBatchLines, createChatBatch } from '../../helpers/batch-fixtures.js';
import { waitFor, waitForValue } from '../../helpers/wait.js';
import { isDeadPredecessor, runnerName } from '../../../src/core/batches/runner-identity.js';

const TOKEN = 'batch-lease-namespaces-admin-token-0123456789';
const LINES = 120;
/** A new pid namespace (the gateway is its pid 1), killed with the wrapper. */
const CONTAINER = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child'];
const canUnshare = spawnSync(CONTAINER[0]!, [...CONTAINER.slice(1), 'true']).status === 0;

describe('two live gateways in two pid namespaces on one data folder', { skip: !canUnshare && 'no unshare' }, () => {
  let mock: OpenAiUpstream;
  let configFile: string;
  let dataDir: string;
  const gateways: GatewayProcess[] = [];
  const env = () => ({
    GATEWAY_ENV: 'prod',
    ADMIN_TOKEN: TOKEN,
    UPSTREAM_BASE_URL: mock.baseUrl,
    GATEWAY_CONFIG: configFile,
    LOG_LEVEL: 'info',
  });
  before(async () => {
    mock = await startOpenAiUpstream();
    mock.defaultBehavior = { kind: 'json', delayMs: 40 };
    dataDir = makeTempDir('gw-lease-ns-');
    configFile = join(dataDir, 'gateway.yaml');
    writeFileSync(
      configFile,
      ['usage:', '  enabled: false', 'batches:', '  concurrency: 2', '  poll_ms: 50'].join('\n'),
    );
  });
  after(async () => {
    for (const gw of gateways) await gw.kill();
    await killAllGateways();
    removeTempDirs();
    await mock.close();
  });

  test(
    "the second does not take the first one's live lease: no line reaches the upstream twice",
    { timeout: 90_000 },
    async () => {
      const first = await startGatewayProcess({ env: env(), dataDir, wrapper: CONTAINER });
      gateways.push(first);
      const client = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
      const jsonl = chatBatchLines(
        LINES,
        (i) => `line-${i}`,
        (i) => `n${i}`,
      );
      const created = await createChatBatch(client, jsonl, 'in.jsonl');
      await waitFor('10 lines at the upstream', () => mock.chatRequests().length >= 10, 30_000);

      const second = await startGatewayProcess({ env: env(), dataDir, wrapper: CONTAINER });
      gateways.push(second);
      const ended = await waitForValue(
        'the batch to complete',
        () => client.batches.retrieve(created.id),
        (b) => b.status === 'completed',
        60_000,
      );
      assert.deepEqual(ended.request_counts, { total: LINES, completed: LINES, failed: 0 });
      const sent = new Map<string, number>();
      for (const request of mock.chatRequests()) {
        const content = JSON.stringify((request.json as { messages?: unknown })?.messages);
        sent.set(content, (sent.get(content) ?? 0) + 1);
      }
      const twice = [...sent.values()].filter((n) => n > 1).length;
      assert.equal(twice, 0, `${twice} lines reached the upstream twice`);
      assert.ok(!second.stdout().includes('took back the leases'), 'the live lease was taken back');
    },
  );
});

test("a lease of another pid namespace is never a dead predecessor's, whatever its pid", () => {
  const me = runnerName('host:/data', 1, '4026531836');
  const otherContainer = runnerName('host:/data', 1, '4026532999').holder;
  const gone = () => false;
  assert.equal(isDeadPredecessor(otherContainer, me, 1, gone), false);
  assert.equal(isDeadPredecessor(runnerName('host:/data', 7, '4026531836').holder, me, 1, gone), true);
});
