/**
 * A gateway with traffic the dashboard can show: a priced model, an unpriced one, a retry-free 502, a refused request, and a
 * webhook subscription whose receiver always fails (max 1 attempt), so dead letters appear.
 */
import { startOpenAiUpstream, type OpenAiUpstream } from './upstreams/openai.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from './gateway.js';
import { call } from './http.js';
import { SqliteOutbox } from '../../src/store/sqlite/sqlite-outbox.js';

export interface DashboardFixture {
  mock: OpenAiUpstream;
  receiver: WebhookReceiver;
  gw: TestGateway;
  /** What the test itself sent, to compare with what the page shows. */
  sent: {
    requests: number;
    serverErrors: number;
    clientErrors: number;
    failedRequestId: string;
    tokens: number;
    /** A model with no price anywhere (the default upstream is `openai-compatible`: no catalog family), called twice. */
    unpricedModel: string;
  };
  close(): Promise<void>;
}

export async function startDashboardFixture(): Promise<DashboardFixture> {
  const mock = await startOpenAiUpstream();
  const receiver = await startWebhookReceiver();
  receiver.setDefault(500);
  const gw = await startGateway({
    env: { UPSTREAM_BASE_URL: mock.baseUrl, WH_SECRET: 'whsec-dashboard-test-0123456789' },
    configFile: {
      name: 'dashboard.json',
      text: JSON.stringify({
        limits: { upstream_pause_max_seconds: 0 },
        circuit_breaker: { failure_threshold: 1000 },
        models: [
          {
            id: 'priced',
            upstream: 'default',
            upstream_model: 'gpt-4o-mini',
            pricing: { input_per_million: 1, output_per_million: 2 },
          },
        ],
        webhooks: {
          allow_private_addresses: true,
          max_attempts: 1,
          poll_interval_ms: 50,
          subscriptions: [
            { id: 'billing', url: receiver.url, secrets: [{ env: 'WH_SECRET' }], events: ['chat.failed'] },
          ],
        },
      }),
    },
  });
  const sent = {
    requests: 0,
    serverErrors: 0,
    clientErrors: 0,
    failedRequestId: '',
    tokens: 0,
    unpricedModel: 'house-model-without-price',
  };
  for (const model of ['priced', 'priced', 'priced', sent.unpricedModel, sent.unpricedModel]) {
    const ok = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model }),
    });
    const usage = ok.json.usage as { total_tokens: number };
    sent.tokens += usage.total_tokens;
    sent.requests += 1;
  }
  mock.enqueue({ kind: 'error', status: 500 });
  const failed = await call(`${gw.url}${CHAT_PATH}`, {
    method: 'POST',
    headers: authHeaders(),
    body: chatBody({ model: 'priced' }),
  });
  if (failed.status !== 502) throw new Error(`expected a 502, got ${failed.status}`);
  sent.failedRequestId = String(failed.headers['x-request-id']);
  sent.requests += 1;
  sent.serverErrors += 1;
  const refused = await call(`${gw.url}${CHAT_PATH}`, {
    method: 'POST',
    headers: authHeaders(),
    body: JSON.stringify({ model: 'priced', messages: 'not a list' }),
  });
  if (refused.status !== 400) throw new Error(`expected a 400, got ${refused.status}`);
  sent.requests += 1;
  sent.clientErrors += 1;
  // Both chat.failed events (the 502 and the 400) are tried once, refused by the receiver, and dead-lettered.
  await receiver.waitFor(2);
  const deadline = Date.now() + 5_000;
  const outbox = new SqliteOutbox(gw.store.db);
  while ((await outbox.listDead(10)).length < 2) {
    if (Date.now() > deadline) throw new Error('the failed delivery was not dead-lettered in time');
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    mock,
    receiver,
    gw,
    sent,
    async close() {
      await gw.close();
      await Promise.all([mock.close(), receiver.close()]);
    },
  };
}
