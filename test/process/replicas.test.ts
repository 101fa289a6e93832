import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { OwnRedis, REDIS_SERVER_BIN, freePort } from '../helpers/own-redis.js';
import { waitFor } from '../helpers/wait.js';
import {
  CHAT_PATH,
  bearer,
  httpCall,
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
} from '../helpers/spawn-gateway.js';

const TOKEN = 'replica-admin-token-0123456789';
const skip = REDIS_SERVER_BIN
  ? undefined
  : process.env.REQUIRE_SERVICES === '1'
    ? assert.fail('redis-server is required in CI')
    : 'redis-server not installed: skipping the two-replica tests';
if (skip) console.log(`# SKIP ${skip}`);

/** Two real gateway processes, each with its own data directory, sharing one Redis: the deployment issue 3 is about. */
describe('two gateway processes sharing one Redis', { skip }, () => {
  let mock: OpenAiUpstream;
  let redis: OwnRedis;
  let replicas: GatewayProcess[] = [];
  before(async () => {
    mock = await startOpenAiUpstream();
    redis = new OwnRedis(await freePort());
    await redis.start();
    const configDir = makeTempDir('gw-replicas-');
    const configFile = join(configDir, 'gateway.yaml');
    writeFileSync(configFile, 'limits:\n  caller:\n    requests: { limit: 10, window_seconds: 60 }\n');
    const env = {
      GATEWAY_ENV: 'prod',
      ADMIN_TOKEN: TOKEN,
      UPSTREAM_BASE_URL: mock.baseUrl,
      REDIS_URL: redis.url,
      GATEWAY_CONFIG: configFile,
      LOG_LEVEL: 'warn',
    };
    replicas = await Promise.all([startGatewayProcess({ env }), startGatewayProcess({ env })]);
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
    await redis.stop();
    await mock.close();
  });

  /**
   * After a Redis restart: waits until each replica reads Redis again. Looking up a response id that does not exist
   * is a 404 once the store answers and a 503 while it does not, and counts against no limit.
   */
  const bothReconnected = () =>
    waitFor('both replicas reconnected to Redis', async () => {
      const answers = await Promise.all(
        replicas.map((r) => httpCall(`${r.url}/v1/responses/resp_none`, { headers: bearer(TOKEN) })),
      );
      return answers.every((a) => a.status === 404);
    });

  const chat = (replica: GatewayProcess, headers: Record<string, string> = {}) =>
    httpCall(`${replica.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: bearer(TOKEN, { 'content-type': 'application/json', ...headers }),
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });

  test('a limit of 10 per minute lets 10 through in total, not 10 per replica', { timeout: 30_000 }, async () => {
    mock.reset();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => chat(replicas[i % 2] as GatewayProcess)));
    const passed = answers.filter((a) => a.status === 200).length;
    const refused = answers.filter((a) => a.status === 429).length;
    assert.equal(passed, 10, `passed ${passed}`);
    assert.equal(refused, 20);
    assert.equal(mock.chatRequests().length, 10);
    const servedBy = [0, 1].map((r) => answers.filter((a, i) => i % 2 === r && a.status === 200).length);
    assert.equal(servedBy[0]! + servedBy[1]!, 10);
  });

  test(
    '10 concurrent duplicates of one Idempotency-Key over both replicas: exactly one upstream call',
    { timeout: 30_000 },
    async () => {
      await redis.stop(); // a fresh Redis: the previous test used up the caller's requests
      await redis.start();
      await bothReconnected();
      mock.reset();
      mock.enqueue({ kind: 'json', delayMs: 300 });
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          chat(replicas[i % 2] as GatewayProcess, { 'idempotency-key': 'shared-key-1' }),
        ),
      );
      assert.equal(mock.chatRequests().length, 1, 'one upstream call for the key across both replicas');
      for (const a of answers) assert.ok([200, 409].includes(a.status), `status ${a.status}: ${a.text}`);
      const replay = await chat(replicas[1] as GatewayProcess, { 'idempotency-key': 'shared-key-1' });
      const replay0 = await chat(replicas[0] as GatewayProcess, { 'idempotency-key': 'shared-key-1' });
      assert.equal(replay.status, 200);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.equal(replay0.text, replay.text);
      assert.equal(mock.chatRequests().length, 1);
    },
  );

  test(
    'a Responses conversation started on one replica continues, is read and deleted on the other (openai SDK)',
    { timeout: 30_000 },
    async () => {
      await redis.stop(); // fresh limits
      await redis.start();
      await bothReconnected();
      mock.reset();
      const [a, b] = replicas as [GatewayProcess, GatewayProcess];
      const sdk = (replica: GatewayProcess) =>
        new OpenAI({ baseURL: `${replica.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
      const first = await sdk(a).responses.create({ model: 'gpt-4o-mini', input: 'My name is Ada.' });
      const second = await sdk(b).responses.create({
        model: 'gpt-4o-mini',
        input: 'What is my name?',
        previous_response_id: first.id,
      });
      const messages = (mock.chatRequests()[1]?.json as { messages: Array<{ role: string; content: unknown }> })
        .messages;
      assert.deepEqual(
        messages.map((m) => [m.role, m.content]),
        [
          ['user', 'My name is Ada.'],
          ['assistant', 'Hello from mock'],
          ['user', 'What is my name?'],
        ],
      );
      assert.equal((await sdk(a).responses.retrieve(second.id)).id, second.id);
      await sdk(a).responses.delete(first.id);
      await assert.rejects(sdk(b).responses.retrieve(first.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
    },
  );

  test(
    "one replica's upstream 429 + Retry-After holds the other replica's calls too",
    { timeout: 30_000 },
    async () => {
      await redis.stop(); // fresh limits and keys
      await redis.start();
      await new Promise((r) => setTimeout(r, 1500)); // both replicas reconnect; their pause views are now stale
      mock.reset();
      mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '20' } });
      const first = await chat(replicas[0] as GatewayProcess);
      assert.equal(first.status, 429);
      const other = await chat(replicas[1] as GatewayProcess);
      assert.equal(other.status, 429, `the other replica: ${other.text}`);
      assert.equal((JSON.parse(other.text) as { details: { paused?: boolean } }).details.paused, true);
      assert.ok(Number(other.headers['retry-after']) >= 19, `Retry-After ${other.headers['retry-after']}`);
      assert.equal(mock.chatRequests().length, 1, 'only the first call reached the upstream');
    },
  );
});
