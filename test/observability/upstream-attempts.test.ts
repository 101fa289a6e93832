/**
 * Fallbacks are not silent: a primary that fails on every call while its fallback answers is counted per attempt
 * (llmgw_upstream_attempts_total, llmgw_upstream_failovers_total), logged once per failed attempt (warn, no
 * secret, nothing the upstream wrote) and shown on the dashboard. Before, every call answered 200 and nothing
 * said the primary was failing: llmgw_upstream_errors_total counts only requests that failed in the end, and the
 * dashboard showed the primary's token-free probe as ok.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { readStream } from '../helpers/sse-client.js';
import { UpstreamAttemptStats } from '../../src/observability/upstream-attempts.js';

/** The caller's own key: never known to the log scrubber, so only not logging it at all keeps it out. */
const CALLER_KEY = 'sk-caller-own-secret-0123456789';

interface LogLine {
  level: number;
  msg: string;
  event?: string;
  request_id?: string;
  upstream?: string;
  upstream_model?: string;
  model?: string;
  code?: string;
  upstream_status?: number;
  next?: string;
  try?: number;
}

/** A metric sample's value from the exposition text, or undefined when the series is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('every upstream attempt is counted, logged when it failed, and shown on the dashboard', () => {
  let primary: OpenAiUpstream;
  let fallback: OpenAiUpstream;
  let gw: TestGateway;
  const yaml = () =>
    [
      'upstreams:',
      `  - { name: primary, base_url: "${primary.baseUrl}" }`,
      `  - { name: backup, base_url: "${fallback.baseUrl}" }`,
      'models:',
      '  - id: resilient',
      '    upstream: primary',
      '    upstream_model: model-p',
      '    fallbacks: [{ upstream: backup, upstream_model: model-b }]',
    ].join('\n');
  const attemptLines = () =>
    gw.logLines.map((l) => JSON.parse(l) as LogLine).filter((l) => l.event === 'upstream_attempt_failed');
  const metricsText = async () => (await call(`${gw.url}/metrics`, { headers: authHeaders() })).text;
  const overviewUpstreams = async () => {
    const overview = await call(`${gw.url}/dashboard/api/overview`, { headers: authHeaders() });
    assert.equal(overview.status, 200, overview.text);
    return overview.json.upstreams as Array<{ name: string; status: string; attempts: Record<string, unknown> }>;
  };

  before(async () => {
    [primary, fallback] = await Promise.all([startOpenAiUpstream(), startOpenAiUpstream()]);
  });
  beforeEach(async () => {
    primary.reset();
    fallback.reset();
    await gw?.close();
    gw = await startGateway({ configFile: { name: 'fallback.yaml', text: yaml() } });
  });
  after(async () => {
    await gw.close();
    await Promise.all([primary.close(), fallback.close()]);
  });

  test('a primary failing on every call while the fallback answers: metric, one warn line per failed attempt, dashboard', async () => {
    // The primary's error body echoes the caller's key, as some providers do: none of it may reach the log.
    const echo = { error: { message: `Server error for key ${CALLER_KEY}`, type: CALLER_KEY, code: 'server_error' } };
    primary.defaultBehavior = { kind: 'error', status: 500, body: echo };
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await call(`${gw.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: authHeaders({ 'x-upstream-key': CALLER_KEY }),
        body: chatBody({ model: 'resilient' }),
      });
      assert.equal(answer.status, 200, answer.text);
      ids.push(String(answer.headers['x-request-id']));
    }
    assert.deepEqual([primary.chatRequests().length, fallback.chatRequests().length], [3, 3]);

    const metrics = await metricsText();
    assert.equal(sample(metrics, 'llmgw_upstream_attempts_total{upstream="primary",outcome="upstream_error"}'), 3);
    assert.equal(sample(metrics, 'llmgw_upstream_attempts_total{upstream="backup",outcome="ok"}'), 3);
    assert.equal(sample(metrics, 'llmgw_upstream_failovers_total{upstream="primary",reason="failed"}'), 3);
    assert.equal(sample(metrics, 'llmgw_upstream_attempts_total{upstream="primary",outcome="ok"}'), undefined);
    assert.doesNotMatch(metrics, /llmgw_upstream_errors_total\{/, 'no request failed in the end');

    const lines = attemptLines();
    assert.equal(lines.length, 3, 'one line per failed attempt');
    for (const [i, line] of lines.entries()) {
      assert.equal(line.level, 40, 'warn');
      assert.deepEqual(
        [
          line.request_id,
          line.upstream,
          line.upstream_model,
          line.model,
          line.code,
          line.upstream_status,
          line.next,
          line.try,
        ],
        [ids[i], 'primary', 'model-p', 'resilient', 'upstream_error', 500, 'fallback', 1],
      );
      assert.equal(line.msg, 'upstream attempt failed; trying the next target');
    }
    assert.ok(!gw.logLines.join('\n').includes(CALLER_KEY), 'no line holds the key the upstream echoed');
    assert.ok(!gw.logLines.join('\n').includes('Server error for key'), 'nothing the upstream wrote is logged');

    const upstreams = await overviewUpstreams();
    const byName = Object.fromEntries(upstreams.map((u) => [u.name, u]));
    assert.equal(byName.primary?.status, 'ok', 'the token-free probe still answers...');
    assert.deepEqual(
      { ...byName.primary?.attempts, lastFailure: undefined },
      { attempts: 3, ok: 0, failed: 3, failovers: 3, lastFailure: undefined },
      '...but every call to it failed',
    );
    assert.equal((byName.primary?.attempts.lastFailure as { code?: string } | null)?.code, 'upstream_error');
    assert.deepEqual(byName.backup?.attempts, { attempts: 3, ok: 3, failed: 0, failovers: 0, lastFailure: null });
  });

  test('streams: a failure before the first chunk fails over; a cut mid-way is a failed attempt with no next try', async () => {
    primary.enqueue({ kind: 'reset', afterChunks: 0 });
    fallback.enqueue({ kind: 'stream' });
    const failedOver = await readStream(
      `${gw.url}${CHAT_PATH}`,
      chatBody({ model: 'resilient', stream: true }),
      authHeaders(),
    );
    assert.ok(failedOver.text.endsWith('data: [DONE]\n\n'));

    primary.enqueue({ kind: 'reset', afterChunks: 1 });
    const cut = await readStream(
      `${gw.url}${CHAT_PATH}`,
      chatBody({ model: 'resilient', stream: true }),
      authHeaders(),
    );
    assert.match(cut.text, /event: error/);

    const lines = attemptLines().map((l) => [l.upstream, l.code, l.next]);
    assert.deepEqual(lines, [
      ['primary', 'upstream_connection_reset', 'fallback'],
      ['primary', 'upstream_connection_reset', 'none'],
    ]);
    const metrics = await metricsText();
    assert.equal(
      sample(metrics, 'llmgw_upstream_attempts_total{upstream="primary",outcome="upstream_connection_reset"}'),
      2,
    );
    assert.equal(sample(metrics, 'llmgw_upstream_attempts_total{upstream="backup",outcome="ok"}'), 1);
    assert.equal(sample(metrics, 'llmgw_upstream_failovers_total{upstream="primary",reason="failed"}'), 1);
  });

  test("a caller's own mistake refused by the upstream is counted and logged at info, not warn; no failover", async () => {
    primary.enqueue({ kind: 'error', status: 400 });
    const refused = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'resilient' }),
    });
    assert.equal(refused.status, 400);
    const [line, ...more] = attemptLines();
    assert.equal(more.length, 0);
    assert.deepEqual([line?.level, line?.upstream, line?.next], [30, 'primary', 'none']);
    const metrics = await metricsText();
    assert.equal(sample(metrics, `llmgw_upstream_attempts_total{upstream="primary",outcome="${line?.code}"}`), 1);
    assert.doesNotMatch(metrics, /llmgw_upstream_failovers_total\{/);
  });
});

describe('UpstreamAttemptStats (unit)', () => {
  test('tallies per upstream: outcomes, failovers, the last failure; a caller who left is not a failure', () => {
    const stats = new UpstreamAttemptStats();
    stats.attempt('a', 'upstream_error', Date.parse('2026-01-02T03:04:05Z'));
    stats.attempt('a', 'ok');
    stats.attempt('a', 'client_closed_request');
    stats.failover('a', 'failed');
    stats.failover('a', 'circuit_open');
    assert.deepEqual(stats.summary(), {
      a: {
        attempts: 3,
        ok: 1,
        failed: 1,
        failovers: 2,
        lastFailure: { code: 'upstream_error', at: '2026-01-02T03:04:05.000Z' },
      },
    });
    assert.deepEqual(stats.failoverSamples(), [
      { labels: { upstream: 'a', reason: 'failed' }, value: 1 },
      { labels: { upstream: 'a', reason: 'circuit_open' }, value: 1 },
    ]);
  });
});
