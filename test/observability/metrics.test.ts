/** Prometheus metrics from real traffic, scraped from the gateway's /metrics behind the admin token. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CHAT_PATH, authHeaders, chatBody, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { readStream } from '../helpers/sse-client.js';

/** The value of one sample line, e.g. `llmgw_requests_total{route="chat",...} 3`. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelPart = line.slice(name.length, line.lastIndexOf(' '));
    if (wanted.every((w) => labelPart.includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe('Prometheus metrics', () => {
  const fixture = useGateway({
    configFile: {
      name: 'metrics.json',
      text: JSON.stringify({
        limits: { upstream_pause_max_seconds: 0, caller: { requests: { limit: 5, window_seconds: 60 } } },
        circuit_breaker: { failure_threshold: 1, cooldown_seconds: 60 },
        models: [
          {
            id: 'priced',
            upstream: 'default',
            upstream_model: 'gpt-4o-mini',
            pricing: { input_per_million: 1, output_per_million: 2 },
          },
        ],
      }),
    },
  });

  test('/metrics needs the admin token', async () => {
    assert.equal((await call(`${fixture.gw.url}/metrics`)).status, 401);
    const ok = await call(`${fixture.gw.url}/metrics`, { headers: authHeaders() });
    assert.equal(ok.status, 200);
    assert.match(String(ok.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  });

  test('requests, latency, TTFB, tokens, cost, upstream errors, circuits and refusals reflect the traffic', async () => {
    const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'priced' }),
    });
    const usage = answer.json.usage as { prompt_tokens: number; completion_tokens: number };
    fixture.mock.enqueue({ kind: 'stream' });
    await readStream(`${fixture.gw.url}${CHAT_PATH}`, chatBody({ model: 'priced', stream: true }), authHeaders());
    fixture.mock.enqueue({ kind: 'json', status: 500, body: { error: { message: 'down' } } });
    assert.equal(
      (
        await call(`${fixture.gw.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: authHeaders(),
          body: chatBody({ model: 'priced' }),
        })
      ).status,
      502,
    );
    assert.equal(
      (
        await call(`${fixture.gw.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: authHeaders(),
          body: chatBody({ model: 'priced' }),
        })
      ).status,
      503,
      'the circuit is open now',
    );
    await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'priced' }),
    });
    assert.equal(
      (
        await call(`${fixture.gw.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: authHeaders(),
          body: chatBody({ model: 'priced' }),
        })
      ).status,
      429,
    );

    const text = (await call(`${fixture.gw.url}/metrics`, { headers: authHeaders() })).text;
    assert.equal(sample(text, 'llmgw_requests_total', { route: 'chat', model: 'priced', status: '200', code: '' }), 2);
    assert.equal(
      sample(text, 'llmgw_requests_total', { route: 'chat', model: 'priced', status: '502', code: 'upstream_error' }),
      1,
    );
    assert.equal(
      sample(text, 'llmgw_requests_total', { route: 'chat', model: 'priced', status: '429', code: 'rate_limited' }),
      1,
    );
    assert.equal(
      sample(text, 'llmgw_requests_total', {
        route: 'chat',
        model: 'priced',
        status: '503',
        code: 'upstream_circuit_open',
      }),
      2,
    );
    assert.equal(sample(text, 'llmgw_request_duration_seconds_count', { route: 'chat', model: 'priced' }), 6);
    assert.equal(
      sample(text, 'llmgw_request_duration_seconds_bucket', { route: 'chat', model: 'priced', le: '+Inf' }),
      6,
    );
    const buckets = text
      .split('\n')
      .filter((l) => l.startsWith('llmgw_request_duration_seconds_bucket{') && l.includes('model="priced"'))
      .map((l) => Number(l.slice(l.lastIndexOf(' ') + 1)));
    assert.deepEqual(
      buckets,
      [...buckets].sort((x, y) => x - y),
      'buckets are cumulative',
    );
    assert.ok((sample(text, 'llmgw_request_duration_seconds_sum', { route: 'chat', model: 'priced' }) ?? 0) > 0);
    assert.match(text, /# TYPE llmgw_request_duration_seconds histogram/);
    assert.equal(sample(text, 'llmgw_stream_ttfb_seconds_count', { model: 'priced' }), 1);
    assert.ok((sample(text, 'llmgw_tokens_total', { model: 'priced', kind: 'prompt' }) ?? 0) >= usage.prompt_tokens);
    assert.ok((sample(text, 'llmgw_cost_usd_total', { model: 'priced' }) ?? 0) > 0);
    assert.equal(sample(text, 'llmgw_upstream_errors_total', { upstream: 'default', code: 'upstream_error' }), 1);
    assert.equal(sample(text, 'llmgw_circuit_state', { upstream: 'default' }), 2, 'open');
    assert.equal(sample(text, 'llmgw_limit_refusals_total', { code: 'rate_limited' }), 1);
    // The test logger's destination never drops; the counter is there, at the process's figure (issue 33).
    assert.match(text, /# TYPE llmgw_log_lines_dropped_total counter/);
    assert.equal(typeof sample(text, 'llmgw_log_lines_dropped_total', {}), 'number');
  });
});
