/**
 * The outbox survives what a process can suffer: kill -9 in the middle of retries (SQLite, a real process
 * restarted on the same data directory), and several instances sharing Redis deliver each event exactly once.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import {
  CHAT_PATH,
  bearer,
  httpCall,
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
} from '../helpers/spawn-gateway.js';
import { authHeaders, chatBody, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { REDIS_URL, redisSkipReason } from '../helpers/services.js';
import { connectRedis } from '../../src/store/redis/connect.js';
import { verifyWebhook } from '../../src/webhooks/verify.js';

const SECRET = 'whsec_durability_0123456789';
const TOKEN = 'durability-admin-token-0123456789';

const config = (url: string, subscription = 'rx') =>
  JSON.stringify({
    limits: { upstream_pause_max_seconds: 0 },
    webhooks: {
      allow_private_addresses: true,
      poll_interval_ms: 50,
      base_delay_ms: 200,
      max_delay_ms: 400,
      max_attempts: 100,
      timeout_ms: 1_000,
      subscriptions: [{ id: subscription, url, secrets: [{ env: 'WH_SECRET' }], events: ['chat.completed'] }],
    },
  });

describe('webhook durability', () => {
  let mock: OpenAiUpstream;
  let receiver: WebhookReceiver;
  before(async () => {
    mock = await startOpenAiUpstream();
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
    await receiver.close();
    await mock.close();
  });

  test(
    'kill -9 while deliveries are being retried: the restarted gateway delivers every one, same ids',
    { timeout: 60_000 },
    async () => {
      receiver.setDefault(503);
      const configFile = join(makeTempDir('gw-wh-kill-'), 'gateway.json');
      writeFileSync(configFile, config(receiver.url));
      const env = {
        GATEWAY_ENV: 'prod',
        ADMIN_TOKEN: TOKEN,
        UPSTREAM_BASE_URL: mock.baseUrl,
        GATEWAY_CONFIG: configFile,
        WH_SECRET: SECRET,
        LOG_LEVEL: 'warn',
      };
      const first = await startGatewayProcess({ env });
      for (let i = 0; i < 5; i++) {
        const answer = await httpCall(`${first.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: bearer(TOKEN, { 'content-type': 'application/json' }),
          body: chatBody(),
        });
        assert.equal(answer.status, 200);
      }
      // Every event has been tried (and refused) at least twice before the kill.
      const ids = () => new Set(receiver.deliveries.map((d) => String(d.headers['x-webhook-id'])));
      await until(
        () =>
          ids().size === 5 &&
          [...ids()].every((id) => receiver.deliveries.filter((d) => d.headers['x-webhook-id'] === id).length >= 2),
      );
      first.signal('SIGKILL');
      const exit = await first.waitForExit(5_000);
      assert.equal(exit.signal, 'SIGKILL');
      const eventIds = ids();
      const before = receiver.deliveries.length;
      assert.ok(
        receiver.deliveries.every((d) => d.answered === 503),
        'nothing was delivered before the kill',
      );
      receiver.setDefault(200);

      const second = await startGatewayProcess({ env, dataDir: first.dataDir });
      const delivered = () =>
        new Set(receiver.deliveries.filter((d) => d.answered === 200).map((d) => String(d.headers['x-webhook-id'])));
      await until(() => delivered().size === 5, 20_000);
      assert.deepEqual([...delivered()].sort(), [...eventIds].sort(), 'the same events, under the same ids');
      for (const d of receiver.deliveries.slice(before))
        assert.equal(verifyWebhook({ body: d.body, headers: d.headers, secret: SECRET }).event, 'chat.completed');
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(receiver.deliveries.filter((d) => d.answered === 200).length, 5, 'each delivered once');
      await second.kill();
    },
  );
});

const skip = await redisSkipReason();

describe('webhooks across instances sharing Redis', { skip }, () => {
  let mock: OpenAiUpstream;
  let receiver: WebhookReceiver;
  const gateways: TestGateway[] = [];
  const subscription = `rx-${randomUUID().slice(0, 8)}`;
  before(async () => {
    mock = await startOpenAiUpstream();
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    for (const g of gateways) await g.close();
    await receiver.close();
    await mock.close();
    const client = await connectRedis(REDIS_URL);
    const keys = await client.keys(`gw:wh:*${subscription}*`);
    if (keys.length > 0) await client.del(...keys);
    await client.quit();
  });

  test('two instances, one outbox: every event is delivered once, by one of them', { timeout: 30_000 }, async () => {
    for (let i = 0; i < 2; i++) {
      gateways.push(
        await startGateway({
          env: { UPSTREAM_BASE_URL: mock.baseUrl, REDIS_URL, WH_SECRET: SECRET },
          configFile: { name: 'wh-redis.json', text: config(receiver.url, subscription) },
        }),
      );
    }
    const calls = Array.from({ length: 30 }, (_, i) =>
      call(`${gateways[i % 2]?.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() }),
    );
    const answers = await Promise.all(calls);
    assert.deepEqual([...new Set(answers.map((a) => a.status))], [200]);
    const requestIds = new Set(answers.map((a) => String(a.headers['x-request-id'])));
    await receiver.waitFor(30);
    await new Promise((r) => setTimeout(r, 500));
    const events = receiver.deliveries.map((d) => verifyWebhook({ body: d.body, headers: d.headers, secret: SECRET }));
    assert.equal(events.length, 30, 'no event delivered twice');
    assert.equal(new Set(events.map((e) => e.id)).size, 30);
    assert.deepEqual(new Set(events.map((e) => String(e.data.request_id))), requestIds);
  });
});

async function until(check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
