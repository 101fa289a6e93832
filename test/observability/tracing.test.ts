/**
 * OpenTelemetry tracing against a real OTLP/HTTP receiver: a SERVER span per request and a CLIENT span per
 * upstream attempt (retries and fallbacks), the attempt's context sent upstream in `traceparent`, the caller's
 * trace continued, and nothing at all while tracing is off (the default).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { readStream } from '../helpers/sse-client.js';
import { startOtlpCollector, type CollectedSpan, type OtlpCollector } from '../helpers/otlp-collector.js';
import { loadConfig, ConfigError } from '../../src/config/load.js';

const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

async function spansOf(
  collector: OtlpCollector,
  requestId: string,
  count: number,
): Promise<{ server: CollectedSpan; attempts: CollectedSpan[] }> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const server = collector.spans.find((s) => s.kind === SERVER && s.attributes['llmgw.request_id'] === requestId);
    const attempts = server
      ? collector.spans
          .filter((s) => s.parentSpanId === server.spanId)
          .sort((a, b) => Number(a.attributes['llmgw.attempt']) - Number(b.attributes['llmgw.attempt']))
      : [];
    if (server && attempts.length >= count) return { server, attempts };
    if (Date.now() > deadline)
      throw new Error(`spans of ${requestId} not exported in time (${collector.spans.length} spans so far)`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('OpenTelemetry tracing (on)', () => {
  let a: OpenAiUpstream;
  let b: OpenAiUpstream;
  let c: OpenAiUpstream;
  let collector: OtlpCollector;
  let gw: TestGateway;
  before(async () => {
    [a, b, c, collector] = await Promise.all([
      startOpenAiUpstream(),
      startOpenAiUpstream(),
      startOpenAiUpstream(),
      startOtlpCollector(),
    ]);
    gw = await startGateway({
      env: { OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20collector-secret-4242' },
      configFile: {
        name: 'tracing.yaml',
        text: [
          'tracing:',
          '  enabled: true',
          `  endpoint: "${collector.url}"`,
          '  service_name: gw-under-test',
          '  export_delay_ms: 20',
          'limits: { upstream_pause_max_seconds: 30 }',
          'circuit_breaker: { failure_threshold: 1000 }',
          'upstreams:',
          `  - { name: a, base_url: "${a.baseUrl}" }`,
          `  - { name: b, base_url: "${b.baseUrl}" }`,
          `  - { name: c, base_url: "${c.baseUrl}" }`,
          'models:',
          '  - { id: via-c, upstream: c, upstream_model: model-c, fallbacks: [{ upstream: b, upstream_model: model-b }] }',
          '  - id: traced',
          '    upstream: a',
          '    upstream_model: model-a',
          '    retry: { attempts: 2, base_delay_ms: 1, max_delay_ms: 2 }',
          '    fallbacks: [{ upstream: b, upstream_model: model-b }]',
          '    pricing: { input_per_million: 1, output_per_million: 2 }',
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw.close();
    await Promise.all([a.close(), b.close(), c.close(), collector.close()]);
  });

  test('two failed tries on one upstream and the fallback that answered: one span each, under the request span', async () => {
    a.enqueue({ kind: 'error', status: 500 }, { kind: 'error', status: 503 });
    const answer = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'traced' }),
    });
    assert.equal(answer.status, 200);
    const requestId = String(answer.headers['x-request-id']);
    const { server, attempts } = await spansOf(collector, requestId, 3);

    assert.equal(server.name, 'POST chat');
    assert.equal(server.parentSpanId, '', 'no traceparent from the caller: a new trace');
    assert.equal(server.attributes['http.response.status_code'], 200);
    assert.equal(server.attributes['llmgw.attempts'], 3);
    assert.equal(server.attributes['llmgw.upstream'], 'b');
    assert.equal(server.attributes['gen_ai.request.model'], 'traced');
    assert.equal(server.resource['service.name'], 'gw-under-test');
    assert.equal(server.resource['deployment.environment.name'], 'dev');

    assert.deepEqual(
      attempts.map((s) => [
        s.name,
        s.kind,
        s.attributes['llmgw.upstream'],
        s.attributes['llmgw.try'],
        s.attributes['http.response.status_code'] ?? null,
        s.statusCode,
      ]),
      [
        ['chat model-a', CLIENT, 'a', 1, 500, ERROR],
        ['chat model-a', CLIENT, 'a', 2, 503, ERROR],
        ['chat model-b', CLIENT, 'b', 1, null, 0],
      ],
    );
    assert.equal(attempts[0]?.attributes['error.type'], 'upstream_error');
    assert.equal(attempts[0]?.attributes['gen_ai.provider.name'], 'openai-compatible');
    const usage = answer.json.usage as { prompt_tokens: number; completion_tokens: number };
    assert.equal(attempts[2]?.attributes['gen_ai.usage.input_tokens'], usage.prompt_tokens);
    assert.equal(attempts[2]?.attributes['gen_ai.usage.output_tokens'], usage.completion_tokens);
    assert.equal(server.attributes['gen_ai.usage.output_tokens'], usage.completion_tokens);
    for (const span of attempts) {
      assert.equal(span.traceId, server.traceId);
      assert.ok(span.startMs >= server.startMs && span.endMs <= server.endMs, 'attempts lie inside the request');
    }

    // Each upstream request carried its own attempt's context.
    const sent = [...a.chatRequests().slice(-2), ...b.chatRequests().slice(-1)].map((r) => r.headers.traceparent);
    assert.deepEqual(
      sent,
      attempts.map((s) => `00-${s.traceId}-${s.spanId}-01`),
    );
    // The collector got its credentials; they never reached the log.
    assert.equal(collector.exports[0]?.authorization, 'Bearer collector-secret-4242');
    assert.ok(!gw.logLines.join('\n').includes('collector-secret-4242'));
  });

  test("a caller's traceparent is continued: same trace, the caller's span as parent", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parent = '00f067aa0ba902b7';
    const answer = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders({ traceparent: `00-${traceId}-${parent}-01` }),
      body: chatBody({ model: 'traced' }),
    });
    assert.equal(answer.status, 200);
    const { server, attempts } = await spansOf(collector, String(answer.headers['x-request-id']), 1);
    assert.equal(server.traceId, traceId);
    assert.equal(server.parentSpanId, parent);
    assert.equal(attempts[0]?.traceId, traceId);
    assert.equal(a.chatRequests().at(-1)?.headers.traceparent, `00-${traceId}-${attempts[0]?.spanId}-01`);
  });

  test('a stream: the attempt span lasts until the stream ended and carries its tokens; a cut stream is an error', async () => {
    a.enqueue({ kind: 'stream', delayMs: 30 });
    const ok = await readStream(
      `${gw.url}${CHAT_PATH}`,
      chatBody({ model: 'traced', stream: true, stream_options: { include_usage: true } }),
      authHeaders(),
    );
    assert.equal(ok.status, 200);
    const streamed = await spansOf(collector, String(ok.headers['x-request-id']), 1);
    const attempt = streamed.attempts[0];
    assert.ok(attempt);
    assert.equal(attempt.statusCode, 0);
    assert.ok(
      attempt.endMs - attempt.startMs >= 90,
      `the span covers the whole stream (4+ chunks 30 ms apart), got ${attempt.endMs - attempt.startMs} ms`,
    );
    assert.ok(Number(attempt.attributes['gen_ai.usage.output_tokens']) > 0);
    assert.ok(Number(streamed.server.attributes['llmgw.ttfb_ms']) > 0);

    a.enqueue({ kind: 'reset', afterChunks: 1 });
    const cut = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ model: 'traced', stream: true }), authHeaders());
    assert.match(cut.text, /event: error/);
    const failed = await spansOf(collector, String(cut.headers['x-request-id']), 1);
    assert.equal(failed.attempts[0]?.statusCode, ERROR);
    assert.equal(failed.attempts[0]?.attributes['error.type'], 'upstream_connection_reset');
    assert.equal(failed.server.attributes['error.type'], 'upstream_connection_reset');
    assert.equal(failed.server.statusCode, ERROR);
  });

  test('a caller who leaves mid-stream: the request span ends with 499 and the attempt as client_closed_request', async () => {
    a.enqueue({ kind: 'stall', afterChunks: 1 });
    const left = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ model: 'traced', stream: true }), authHeaders(), {
      stopAfterBytes: 10,
    });
    const { server, attempts } = await spansOf(collector, String(left.headers['x-request-id']), 1);
    assert.equal(server.attributes['http.response.status_code'], 499);
    assert.equal(server.attributes['error.type'], 'client_closed_request');
    assert.equal(server.statusCode, ERROR);
    assert.equal(attempts[0]?.attributes['error.type'], 'client_closed_request');
    assert.equal(attempts[0]?.statusCode, ERROR);
  });

  test('an upstream paused by its 429 is passed over: an event on the request span, no attempt span', async () => {
    c.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '20' } });
    const first = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'via-c' }),
    });
    assert.equal(first.status, 200, 'the fallback answered');
    const tried = await spansOf(collector, String(first.headers['x-request-id']), 2);
    assert.deepEqual(
      tried.attempts.map((s) => [s.attributes['llmgw.upstream'], s.attributes['error.type'] ?? null]),
      [
        ['c', 'upstream_rate_limited'],
        ['b', null],
      ],
    );

    const second = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'via-c' }),
    });
    assert.equal(second.status, 200);
    const skipped = await spansOf(collector, String(second.headers['x-request-id']), 1);
    assert.deepEqual(
      skipped.attempts.map((s) => s.attributes['llmgw.upstream']),
      ['b'],
    );
    assert.deepEqual(skipped.server.events, [
      { name: 'upstream skipped', attributes: { 'llmgw.upstream': 'c', 'llmgw.reason': 'paused' } },
    ]);
  });

  test("a caller's unsampled traceparent (flags 00) is followed: nothing exported, the decision passed upstream", async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const answer = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders({ traceparent: `00-${traceId}-b7ad6b7169203331-00` }),
      body: chatBody({ model: 'traced' }),
    });
    assert.equal(answer.status, 200);
    assert.match(String(a.chatRequests().at(-1)?.headers.traceparent), new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`));
    // A later, sampled request is exported: once its spans are in, this one's would have been too.
    const later = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'traced' }),
    });
    await spansOf(collector, String(later.headers['x-request-id']), 1);
    assert.equal(collector.spans.filter((s) => s.traceId === traceId).length, 0);
  });

  test('a request refused before its handler (no token) still gets its request span', async () => {
    const refused = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chatBody({ model: 'traced' }),
    });
    assert.equal(refused.status, 401);
    const { server, attempts } = await spansOf(collector, String(refused.headers['x-request-id']), 0);
    assert.equal(server.attributes['http.response.status_code'], 401);
    assert.equal(server.attributes['error.type'], 'authentication_required');
    assert.equal(server.statusCode, 0, "a 4xx is the caller's error, not the server span's");
    assert.equal(attempts.length, 0);
  });

  test('a collector that is down costs nothing to callers and is logged once, not per export', async () => {
    collector.status = 500; // not one the exporter retries (429/502/503/504 are): every export fails at once
    const before = collector.exports.length;
    try {
      for (let i = 0; i < 3; i++) {
        assert.equal(
          (
            await call(`${gw.url}${CHAT_PATH}`, {
              method: 'POST',
              headers: authHeaders(),
              body: chatBody({ model: 'traced' }),
            })
          ).status,
          200,
        );
        await new Promise((r) => setTimeout(r, 60));
      }
      const deadline = Date.now() + 3_000;
      while (collector.exports.length < before + 2 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 100));
      assert.ok(collector.exports.length >= before + 2, 'several exports were refused');
      assert.equal(gw.logLines.filter((l) => l.includes('trace export failed')).length, 1);
    } finally {
      collector.status = 200;
    }
  });
});

describe('OpenTelemetry tracing (off, the default)', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({ env: { UPSTREAM_BASE_URL: mock.baseUrl } });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  test('no traceparent goes upstream, even when the caller sent one', async () => {
    assert.equal(gw.config.tracing, undefined);
    const answer = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }),
      body: chatBody(),
    });
    assert.equal(answer.status, 200);
    assert.equal(mock.chatRequests().at(-1)?.headers.traceparent, undefined);
  });
});

describe('tracing configuration', () => {
  const base = { GATEWAY_ENV: 'dev', ADMIN_TOKEN: 'x'.repeat(32), DATA_DIR: '/tmp/gw-tracing-config' };

  test('OTEL_TRACES_EXPORTER=otlp turns it on; the standard variables set endpoint, service and headers', () => {
    const config = loadConfig({
      ...base,
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_SERVICE_NAME: 'edge',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=abc,x-team=ml',
    });
    assert.deepEqual(config.tracing, {
      endpoint: 'http://collector:4318/v1/traces',
      serviceName: 'edge',
      sampleRatio: 1,
      headers: { 'x-api-key': 'abc', 'x-team': 'ml' },
      exportDelayMs: 2000,
      exportTimeoutMs: 10_000,
    });
    assert.equal(
      loadConfig({ ...base, OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c.example/t' })
        .tracing?.endpoint,
      'https://c.example/t',
    );
    assert.equal(loadConfig(base).tracing, undefined, 'off by default');
  });

  test('bad values are reported with the variable that holds them', () => {
    assert.throws(
      () => loadConfig({ ...base, OTEL_TRACES_EXPORTER: 'zipkin' }),
      (e: unknown) => e instanceof ConfigError && /OTEL_TRACES_EXPORTER: must be "otlp" or "none"/.test(e.message),
    );
    assert.throws(
      () => loadConfig({ ...base, OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_HEADERS: 'novalue' }),
      (e: unknown) => e instanceof ConfigError && /OTEL_EXPORTER_OTLP_HEADERS/.test(e.message),
    );
    assert.throws(
      () => loadConfig({ ...base, OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' }),
      (e: unknown) =>
        e instanceof ConfigError &&
        /tracing\.endpoint \(or OTEL_EXPORTER_OTLP_\[TRACES_\]ENDPOINT\): must be an http\(s\):\/\/ URL/.test(
          e.message,
        ),
    );
  });
});
