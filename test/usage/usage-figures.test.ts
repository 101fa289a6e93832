/**
 * Usage figures from upstreams are untrusted (issue 29): a figure out of range (1e300, Infinity, negative, 12.5,
 * a string) from any wire format, JSON or stream, on any surface, is corrected before it reaches limits, budgets,
 * the usage records or an answer; the record is flagged, the access line says so, a metric counts it and one
 * line per upstream and kind is logged. The real gateway in front of a real upstream of every wire format.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { readStream } from '../helpers/sse-client.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../helpers/upstreams/anthropic.js';
import { startGeminiUpstream, type GeminiUpstream } from '../helpers/upstreams/gemini.js';
import { allFigures, answerWithFigures, SANE_FIGURES, type Figures } from '../helpers/upstreams/raw-usage.js';
import { waitForValue } from '../helpers/wait.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import type { UsageRecord } from '../../src/store/store-contract.js';
import { MAX_USAGE_TOKENS, checkedUsage, saneTokens } from '../../src/providers/usage-figures.js';
import { USAGE_ANOMALIES, type UsageAnomaly } from '../../src/providers/provider-contract.js';

const KEY = 'sk-usage-figures-upstream-0123456789';

describe('saneTokens: the one check of an upstream token count', () => {
  test('whole counts from 0 to 100 M pass; the rest is corrected and its kind noted once', () => {
    const cases: Array<[unknown, number, UsageAnomaly | undefined]> = [
      [0, 0, undefined],
      [7, 7, undefined],
      [MAX_USAGE_TOKENS, MAX_USAGE_TOKENS, undefined],
      [undefined, 0, undefined],
      [null, 0, undefined],
      [1e300, MAX_USAGE_TOKENS, 'too_large'],
      [Infinity, MAX_USAGE_TOKENS, 'too_large'],
      [MAX_USAGE_TOKENS + 1, MAX_USAGE_TOKENS, 'too_large'],
      [-1, 0, 'negative'],
      [-Infinity, 0, 'negative'],
      [12.5, 13, 'fractional'],
      [0.1, 1, 'fractional'],
      ['12', 0, 'not_a_number'],
      [NaN, 0, 'not_a_number'],
      [{}, 0, 'not_a_number'],
      [true, 0, 'not_a_number'],
    ];
    for (const [value, sane, kind] of cases) {
      const found: UsageAnomaly[] = [];
      assert.equal(saneTokens(value, found), sane, String(value));
      assert.deepEqual(found, kind ? [kind] : [], String(value));
    }
    const found: UsageAnomaly[] = [];
    saneTokens(-1, found);
    saneTokens(-2, found);
    assert.deepEqual(found, ['negative'], 'each kind once');
  });

  test('checkedUsage: a sane usage is the same object; another is a flagged copy, its total at least prompt + completion', () => {
    const sane = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 };
    assert.equal(checkedUsage(sane), sane);
    const bad = checkedUsage({ prompt_tokens: -1_000_000, completion_tokens: 1e300, total_tokens: -999 });
    assert.deepEqual(
      [bad.prompt_tokens, bad.completion_tokens, bad.total_tokens],
      [0, MAX_USAGE_TOKENS, MAX_USAGE_TOKENS],
    );
    assert.deepEqual(bad[USAGE_ANOMALIES], ['negative', 'too_large']);
    assert.equal(
      JSON.stringify(bad),
      `{"prompt_tokens":0,"completion_tokens":${MAX_USAGE_TOKENS},"total_tokens":${MAX_USAGE_TOKENS}}`,
      'the flag never shows in JSON',
    );
  });
});

describe('usage figures from upstreams', () => {
  let oai: OpenAiUpstream;
  let claude: AnthropicUpstream;
  let gem: GeminiUpstream;
  /** What the next answers report. */
  let figures: Figures = { ...SANE_FIGURES };
  let gw: TestGateway;
  let usage: SqliteUsageStore;
  before(async () => {
    [oai, claude, gem] = await Promise.all([startOpenAiUpstream(), startAnthropicUpstream(), startGeminiUpstream()]);
    answerWithFigures({ openai: oai, anthropic: claude, gemini: gem }, () => figures);
    gw = await startGateway({
      env: { FIGURES_KEY: KEY },
      configFile: {
        name: 'figures.yaml',
        text: [
          'limits: { upstream_pause_max_seconds: 0 }',
          'circuit_breaker: { failure_threshold: 1000 }',
          'upstreams:',
          `  - { name: oai, kind: openai, base_url: "${oai.baseUrl}", api_key_env: FIGURES_KEY }`,
          `  - { name: claude, kind: anthropic, base_url: "${claude.baseUrl}", api_key_env: FIGURES_KEY }`,
          `  - { name: gem, kind: gemini, base_url: "${gem.baseUrl}", api_key_env: FIGURES_KEY }`,
          'models:',
          // $0.001 a token either way: a $1 budget is 1,000 tokens.
          '  - { id: gpt, upstream: oai, upstream_model: gpt-4o-mini, pricing: { input_per_million: 1000, output_per_million: 1000 } }',
          '  - { id: claude, upstream: claude, upstream_model: claude-haiku-4-5 }',
          '  - { id: gem, upstream: gem, upstream_model: gemini-2.0-flash }',
          '  - { id: emb, upstream: oai, upstream_model: text-embedding-3-small, type: embedding }',
        ].join('\n'),
      },
    });
    usage = new SqliteUsageStore(gw.store.db);
  });
  after(async () => {
    await gw?.close();
    await Promise.all([oai?.close(), claude?.close(), gem?.close()]);
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = authHeaders()) =>
    call(`${gw.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  const stream = (path: string, body: unknown, headers: Record<string, string> = authHeaders()) =>
    readStream(`${gw.url}${path}`, JSON.stringify(body), headers);
  const recordOf = async (requestId: unknown): Promise<UsageRecord> =>
    (await waitForValue(
      `the usage record of ${String(requestId)}`,
      async () => (await usage.recent(1_000, false)).find((r) => r.requestId === requestId),
      (r) => r !== undefined,
      5_000,
    )) as UsageRecord;
  const chat = (model: string, extra: Record<string, unknown> = {}) => ({
    model,
    messages: [{ role: 'user', content: 'hi' }],
    ...extra,
  });

  test('1e300 in an answer (JSON and stream) stops no record: later calls are recorded, the bad ones clamped and flagged, logged once', async () => {
    figures = allFigures('1e300');
    const json = await post('/v1/chat/completions', chat('gpt'));
    assert.equal(json.status, 200, json.text);
    assert.deepEqual(
      json.json.usage,
      { prompt_tokens: MAX_USAGE_TOKENS, completion_tokens: MAX_USAGE_TOKENS, total_tokens: 2 * MAX_USAGE_TOKENS },
      'the caller sees what was counted',
    );
    const streamed = await stream(
      '/v1/chat/completions',
      chat('gpt', { stream: true, stream_options: { include_usage: true } }),
      authHeaders(),
    );
    assert.equal(streamed.status, 200);
    assert.ok(!streamed.text.includes('e+300') && !streamed.text.includes('1e300'), streamed.text);
    assert.ok(streamed.text.includes(`"prompt_tokens":${MAX_USAGE_TOKENS}`), streamed.text);
    figures = allFigures(null);
    const after = await post('/v1/chat/completions', chat('gpt'));
    const afterStream = await stream('/v1/chat/completions', chat('gpt', { stream: true }), authHeaders());

    const bad = await recordOf(json.headers['x-request-id']);
    const badStream = await recordOf(streamed.headers['x-request-id']);
    for (const record of [bad, badStream]) {
      assert.deepEqual(
        [record.promptTokens, record.completionTokens, record.costUsd, record.usageAnomaly],
        [MAX_USAGE_TOKENS, MAX_USAGE_TOKENS, 200_000, true],
      );
    }
    const good = await recordOf(after.headers['x-request-id']);
    const goodStream = await recordOf(afterStream.headers['x-request-id']);
    for (const record of [good, goodStream])
      assert.deepEqual([record.promptTokens, record.completionTokens, record.usageAnomaly], [7, 3, false]);

    const lines = gw.logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const access = lines.find((l) => l.msg === 'request' && l.request_id === json.headers['x-request-id']);
    assert.deepEqual([access?.prompt_tokens, access?.usage_anomaly], [MAX_USAGE_TOKENS, ['too_large']]);
    assert.equal(
      lines.find((l) => l.msg === 'request' && l.request_id === after.headers['x-request-id'])?.usage_anomaly,
      undefined,
    );
    const warned = lines.filter(
      (l) => String(l.msg).includes('usage figure out of range') && l.upstream === 'oai' && l.kind === 'too_large',
    );
    assert.equal(warned.length, 1, 'logged once per upstream and kind');
    const metrics = await call(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.match(metrics.text, /^llmgw_usage_anomalies_total\{upstream="oai",kind="too_large"\} 2$/m);
  });

  // Every path by which usage enters: each wire format, JSON and stream, translated and passed through.
  const routes: Array<{ name: string; path: string; body: Record<string, unknown>; recorded?: false }> = [
    { name: 'chat, OpenAI (passed through)', path: '/v1/chat/completions', body: chat('gpt') },
    {
      name: 'chat stream, OpenAI',
      path: '/v1/chat/completions',
      body: chat('gpt', { stream: true, stream_options: { include_usage: true } }),
    },
    { name: 'chat, Anthropic (translated)', path: '/v1/chat/completions', body: chat('claude') },
    {
      name: 'chat stream, Anthropic',
      path: '/v1/chat/completions',
      body: chat('claude', { stream: true, stream_options: { include_usage: true } }),
    },
    { name: 'chat, Gemini', path: '/v1/chat/completions', body: chat('gem') },
    {
      name: 'chat stream, Gemini',
      path: '/v1/chat/completions',
      body: chat('gem', { stream: true, stream_options: { include_usage: true } }),
    },
    { name: 'Messages, Anthropic (native)', path: '/v1/messages', body: chat('claude', { max_tokens: 50 }) },
    {
      name: 'Messages stream, Anthropic (native)',
      path: '/v1/messages',
      body: chat('claude', { max_tokens: 50, stream: true }),
    },
    { name: 'Messages, OpenAI (translated)', path: '/v1/messages', body: chat('gpt', { max_tokens: 50 }) },
    {
      name: 'Messages stream, OpenAI (translated)',
      path: '/v1/messages',
      body: chat('gpt', { max_tokens: 50, stream: true }),
    },
    { name: 'Responses, OpenAI (translated)', path: '/v1/responses', body: { model: 'gpt', input: 'hi' } },
    {
      name: 'Responses stream, OpenAI (translated)',
      path: '/v1/responses',
      body: { model: 'gpt', input: 'hi', stream: true },
    },
    {
      name: 'Responses, OpenAI (native)',
      path: '/v1/responses',
      body: { model: 'gpt', input: 'hi', tools: [{ type: 'web_search' }] },
    },
    {
      name: 'Responses stream, OpenAI (native)',
      path: '/v1/responses',
      body: { model: 'gpt', input: 'hi', tools: [{ type: 'web_search' }], stream: true },
    },
    { name: 'embeddings, OpenAI', path: '/v1/embeddings', body: { model: 'emb', input: 'hi' } },
    { name: 'count_tokens, Anthropic', path: '/v1/messages/count_tokens', body: chat('claude'), recorded: false },
  ];
  /** Every token count an answer shows (chat, Responses, Messages and Gemini names), as its raw JSON text. */
  const shownCounts = (text: string) =>
    [
      ...text.matchAll(
        /"(?:prompt|completion|total|input|output|cache_read_input|cached|reasoning)_tokens":\s*([^,}\]]+)/g,
      ),
    ].map((m) => m[1] as string);

  for (const figure of ['1e300', '1e400', '-1000000', '12.5', '"abc"']) {
    test(`a usage figure of ${figure} on every path: the answer shows only whole counts from 0 to 2e8, the record is sane and flagged`, async () => {
      figures = allFigures(figure);
      const recorded: Array<[string, unknown]> = [];
      try {
        for (const route of routes) {
          const answer =
            route.body.stream === true ? await stream(route.path, route.body) : await post(route.path, route.body);
          if (route.recorded === false && figure === '"abc"') {
            // A count that is no number is no count: the answer the upstream gave cannot be read.
            assert.equal(answer.status, 502, answer.text);
            continue;
          }
          assert.equal(answer.status, 200, `${route.name}: ${answer.text.slice(0, 300)}`);
          const counts = shownCounts(answer.text);
          assert.ok(counts.length > 0, `${route.name} shows counts: ${answer.text.slice(0, 300)}`);
          for (const count of counts)
            assert.ok(
              /^\d+$/.test(count) && Number(count) <= 2 * MAX_USAGE_TOKENS,
              `${route.name} shows ${count}: ${answer.text.slice(0, 600)}`,
            );
          if (route.recorded !== false) recorded.push([route.name, answer.headers['x-request-id']]);
        }
      } finally {
        figures = allFigures(null);
      }
      const ids = new Set(recorded.map(([, id]) => id));
      const records = await waitForValue(
        'the usage records',
        async () => (await usage.recent(1_000, false)).filter((r) => ids.has(r.requestId)),
        (found) => found.length === ids.size,
        5_000,
      );
      for (const [name, id] of recorded) {
        const record = records.find((r) => r.requestId === id) as UsageRecord;
        assert.equal(record.usageAnomaly, true, `${name}: flagged`);
        for (const tokens of [record.promptTokens, record.completionTokens]) {
          assert.ok(
            tokens !== null && Number.isInteger(tokens) && tokens >= 0 && tokens <= MAX_USAGE_TOKENS,
            `${name}: recorded ${tokens}`,
          );
        }
      }
    });
  }

  test('negative usage credits no budget: the next call over budget is still refused, the usage report stays non-negative', async () => {
    const created = await call(`${gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: authHeaders(),
      disclosesKey: true,
      body: JSON.stringify({
        name: 'negative',
        models: ['*'],
        budget: { tokens: 1_000, cost_usd: 1, period_seconds: 86_400 },
      }),
    });
    const { id, key } = created.json as unknown as { id: string; key: string };
    const caller = authHeaders({ authorization: `Bearer ${key}` });
    figures = { prompt: '400', completion: '300', total: '700', other: '0' };
    assert.equal((await post('/v1/chat/completions', chat('gpt'), caller)).status, 200, '700 tokens, $0.70 of $1');
    figures = allFigures('-1000000');
    const negative = await post('/v1/chat/completions', chat('gpt'), caller);
    assert.deepEqual(
      [negative.status, negative.json.usage],
      [200, { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }],
    );
    const negativeStream = await stream('/v1/chat/completions', chat('gpt', { stream: true }), caller);
    assert.equal(negativeStream.status, 200);

    const report = (await call(`${gw.url}/v1/?route=keys&id=${id}&action=usage`, { headers: authHeaders() }))
      .json as Record<string, unknown> & { budget: Record<string, number> };
    assert.deepEqual([report.requests, report.total_tokens, report.cost_usd], [3, 700, 0.7]);
    assert.deepEqual(
      [report.budget.tokens_used, report.budget.tokens_left, report.budget.cost_left_usd],
      [700, 300, 0.3],
    );

    // $0.50 more while $0.30 is left: admitted, and overdraws the budget (which a credit would have hidden).
    figures = { prompt: '300', completion: '200', total: '500', other: '0' };
    assert.equal((await post('/v1/chat/completions', chat('gpt'), caller)).status, 200);
    const costKey = `cost:budget:key:${id}:86400000`;
    await waitForValue(
      'the cost budget overdrawn',
      () =>
        gw.store.db.prepare('SELECT tat_ms FROM rate_limits WHERE key = ?').get(costKey) as
          { tat_ms: number } | undefined,
      (row) => (row?.tat_ms ?? 0) - Date.now() > 86_400_000,
      3_000,
    );
    figures = allFigures(null);
    const refused = await post('/v1/chat/completions', chat('gpt'), caller);
    assert.deepEqual([refused.status, refused.json.code], [429, 'budget_exceeded']);
    const final = (await call(`${gw.url}/v1/?route=keys&id=${id}&action=usage`, { headers: authHeaders() }))
      .json as Record<string, unknown> & { budget: Record<string, number> };
    assert.deepEqual([final.total_tokens, final.budget.tokens_left, final.budget.cost_left_usd], [1_200, 0, 0]);
  });
});
