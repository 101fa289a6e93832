/**
 * Prompt-cache and reasoning tokens priced as providers bill them (issue 31): every provider's usage shape (OpenAI
 * chat, OpenAI Responses, Anthropic Messages, Gemini; JSON and stream; native and translated) through the real
 * gateway in front of a real upstream, with the exact tokens and cost recorded, and a cost budget spent by an
 * agent loop of cache-read-heavy calls as the provider would bill it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { authHeaders, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { dataFrames, namedEvents, readStream } from '../helpers/sse-client.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../helpers/upstreams/anthropic.js';
import { startGeminiUpstream, type GeminiUpstream } from '../helpers/upstreams/gemini.js';
import { answerWithParts, type PartsUsage } from '../helpers/upstreams/raw-usage.js';
import { waitForValue } from '../helpers/wait.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import type { UsageRecord } from '../../src/store/store-contract.js';
import { usageCommand } from '../../src/cli/usage-command.js';
import { checkedUsage, countsOf, withParts } from '../../src/providers/usage-figures.js';
import { chatUsageOf, messagesUsageOf, responsesUsageOf } from '../../src/providers/usage-shapes.js';
import { USAGE_ANOMALIES, type Usage } from '../../src/providers/provider-contract.js';
import { costUsd } from '../../src/core/models/pricing.js';

const KEY = 'sk-token-parts-upstream-0123456789';

/** The issue's own call: 12 uncached input tokens, 9,000 read from the cache, 3 out ($0.002781 at Claude's prices). */
const AGENT_STEP = '{"input_tokens":12,"cache_read_input_tokens":9000,"output_tokens":3}';

/** 2,000 input tokens of which 1,500 cached, 100 out of which 60 reasoning: $0.004125 at $2.50 / $1.25 / $10. */
const OPENAI_SHAPES: PartsUsage = {
  chat: '{"prompt_tokens":2000,"completion_tokens":100,"total_tokens":2100,"prompt_tokens_details":{"cached_tokens":1500},"completion_tokens_details":{"reasoning_tokens":60}}',
  responses:
    '{"input_tokens":2000,"input_tokens_details":{"cached_tokens":1500},"output_tokens":100,"output_tokens_details":{"reasoning_tokens":60},"total_tokens":2100}',
  messages: AGENT_STEP,
  gemini:
    '{"promptTokenCount":2000,"cachedContentTokenCount":1500,"candidatesTokenCount":40,"thoughtsTokenCount":60,"totalTokenCount":2100}',
};

describe('token parts: bounded by what they are parts of', () => {
  test("an upstream's parts out of range are checked, flagged and never more than the prompt or completion", () => {
    const raw = {
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      prompt_tokens_details: { cached_tokens: 1e300 },
      completion_tokens_details: { reasoning_tokens: -3 },
    };
    const usage = checkedUsage(raw as unknown as Usage);
    assert.deepEqual(JSON.parse(JSON.stringify(usage)), {
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      cache_read_tokens: 10,
    });
    assert.deepEqual(usage[USAGE_ANOMALIES], ['too_large', 'negative', 'part_too_large']);
    const parts = withParts(
      { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      { cacheRead: 8, cacheWrite: 5, cacheWrite1h: 9, reasoning: 7 },
    );
    assert.deepEqual(JSON.parse(JSON.stringify(parts)), {
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      cache_read_tokens: 8,
      cache_write_tokens: 2,
      cache_write_1h_tokens: 2,
      reasoning_tokens: 5,
    });
    assert.deepEqual((parts as Usage)[USAGE_ANOMALIES], ['part_too_large'], 'a part cut to its bound is flagged');
    // No token is billed twice, none is billed below its configured price: 8 reads, 2 one-hour writes, 5 out.
    assert.equal(costUsd(parts, { inputPerMillion: 3, outputPerMillion: 15, cacheReadPerMillion: 0.3 }), 0.0000834);
    // A part set by a provider without the check is caught at the gate too.
    const caught = checkedUsage({ prompt_tokens: 4, completion_tokens: 0, total_tokens: 4, cache_read_tokens: 9 });
    assert.deepEqual(JSON.parse(JSON.stringify(caught)), {
      prompt_tokens: 4,
      completion_tokens: 0,
      total_tokens: 4,
      cache_read_tokens: 4,
    });
    assert.deepEqual(caught[USAGE_ANOMALIES], ['part_too_large']);
  });
});

describe("each API's usage shape, from one definition (src/providers/usage-shapes.ts)", () => {
  const parts: Usage = {
    prompt_tokens: 3010,
    completion_tokens: 50,
    total_tokens: 3060,
    cache_read_tokens: 2000,
    cache_write_tokens: 1000,
    cache_write_1h_tokens: 400,
    reasoning_tokens: 20,
  };
  test('chat, Responses and Messages show the same call, each adding up its own way', () => {
    assert.deepEqual(chatUsageOf(parts), {
      prompt_tokens: 3010,
      completion_tokens: 50,
      total_tokens: 3060,
      prompt_tokens_details: { cached_tokens: 2000, cache_write_tokens: 1000 },
      completion_tokens_details: { reasoning_tokens: 20 },
    });
    assert.deepEqual(responsesUsageOf(parts), {
      input_tokens: 3010,
      input_tokens_details: { cached_tokens: 2000, cache_write_tokens: 1000 },
      output_tokens: 50,
      output_tokens_details: { reasoning_tokens: 20 },
      total_tokens: 3060,
    });
    // Anthropic's input_tokens excludes the cache: 3,010 − 2,000 − 1,000.
    assert.deepEqual(messagesUsageOf(parts), {
      input_tokens: 10,
      cache_creation_input_tokens: 1000,
      cache_read_input_tokens: 2000,
      output_tokens: 50,
    });
    // No cache, no reasoning: the plain shapes; Anthropic's cache figures always there, 0, as Anthropic sends them.
    const plain: Usage = { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 };
    assert.deepEqual(
      [chatUsageOf(plain), messagesUsageOf(plain)],
      [plain, { input_tokens: 7, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 2 }],
    );
    assert.deepEqual(responsesUsageOf(plain).input_tokens_details, { cached_tokens: 0 });
  });
  test("DeepSeek's prompt_cache_hit_tokens are the cache reads when prompt_tokens_details.cached_tokens is absent (JSON and stream)", () => {
    const deepseek = () => ({
      prompt_tokens: 2000,
      completion_tokens: 100,
      total_tokens: 2100,
      prompt_cache_hit_tokens: 1500,
      prompt_cache_miss_tokens: 500,
    });
    const expected = { prompt_tokens: 2000, completion_tokens: 100, total_tokens: 2100, cache_read_tokens: 1500 };
    assert.deepEqual({ ...countsOf(deepseek()) }, expected);
    assert.deepEqual({ ...checkedUsage(deepseek() as unknown as Usage) }, expected);
    // Both present: OpenAI's field is the one read.
    assert.deepEqual(
      countsOf({ ...deepseek(), prompt_tokens_details: { cached_tokens: 1200 } })?.cache_read_tokens,
      1200,
    );
    // Checked and bounded as every part.
    const hostile = checkedUsage({ ...deepseek(), prompt_cache_hit_tokens: 1e300 } as unknown as Usage);
    assert.deepEqual([hostile.cache_read_tokens, hostile[USAGE_ANOMALIES]], [2000, ['too_large', 'part_too_large']]);
  });
});

describe('token parts and cost as providers bill them', () => {
  let oai: OpenAiUpstream;
  let claude: AnthropicUpstream;
  let gem: GeminiUpstream;
  /** The usage objects the next answers carry. */
  let partsUsage: PartsUsage;
  let gw: TestGateway;
  let usage: SqliteUsageStore;
  before(async () => {
    partsUsage = { ...OPENAI_SHAPES };
    [oai, claude, gem] = await Promise.all([startOpenAiUpstream(), startAnthropicUpstream(), startGeminiUpstream()]);
    answerWithParts({ openai: oai, anthropic: claude, gemini: gem }, () => partsUsage);
    gw = await startGateway({
      env: { PARTS_KEY: KEY },
      configFile: {
        name: 'parts.yaml',
        text: [
          'limits: { upstream_pause_max_seconds: 0 }',
          'upstreams:',
          `  - { name: oai, kind: openai, base_url: "${oai.baseUrl}", api_key_env: PARTS_KEY }`,
          `  - { name: claude, kind: anthropic, base_url: "${claude.baseUrl}", api_key_env: PARTS_KEY }`,
          `  - { name: gem, kind: gemini, base_url: "${gem.baseUrl}", api_key_env: PARTS_KEY }`,
          'models:',
          '  - { id: gpt, upstream: oai, upstream_model: gpt-5, pricing: { input_per_million: 2.5, output_per_million: 10, cache_read_per_million: 1.25 } }',
          '  - id: claude',
          '    upstream: claude',
          '    upstream_model: claude-sonnet-4-5',
          '    pricing: { input_per_million: 3, output_per_million: 15, cache_read_per_million: 0.3, cache_write_per_million: 3.75, cache_write_1h_per_million: 6 }',
          '  - { id: gem, upstream: gem, upstream_model: gemini-2.5-pro, pricing: { input_per_million: 2.5, output_per_million: 10, cache_read_per_million: 1.25 } }',
          // No cache price: cache reads cost what input costs (the old price, never less than configured).
          '  - { id: claude-plain, upstream: claude, upstream_model: claude-sonnet-4-5, pricing: { input_per_million: 3, output_per_million: 15 } }',
        ].join('\n'),
      },
    });
    usage = new SqliteUsageStore(gw.store.db);
  });
  after(async () => {
    await gw?.close();
    await Promise.all([oai?.close(), claude?.close(), gem?.close()]);
  });

  const send = (path: string, body: Record<string, unknown>, headers: Record<string, string> = authHeaders()) =>
    body.stream === true
      ? readStream(`${gw.url}${path}`, JSON.stringify(body), headers)
      : call(`${gw.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
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
    max_tokens: 16,
    ...extra,
  });
  const streamed = { stream: true, stream_options: { include_usage: true } };
  const native = { tools: [{ type: 'web_search' }] };

  /** [path, body, what the record says: prompt, completion, cost, cache read, cache write, reasoning] for every path a usage enters by. */
  const paths: Array<[string, string, Record<string, unknown>, [number, number, number, number, number, number]]> = [
    ['chat JSON, OpenAI', '/v1/chat/completions', chat('gpt'), [2000, 100, 0.004125, 1500, 0, 60]],
    ['chat stream, OpenAI', '/v1/chat/completions', chat('gpt', streamed), [2000, 100, 0.004125, 1500, 0, 60]],
    [
      'Responses JSON, OpenAI (native)',
      '/v1/responses',
      { model: 'gpt', input: 'hi', ...native },
      [2000, 100, 0.004125, 1500, 0, 60],
    ],
    [
      'Responses stream, OpenAI (native)',
      '/v1/responses',
      { model: 'gpt', input: 'hi', ...native, stream: true },
      [2000, 100, 0.004125, 1500, 0, 60],
    ],
    [
      'Responses JSON, OpenAI (translated from chat)',
      '/v1/responses',
      { model: 'gpt', input: 'hi' },
      [2000, 100, 0.004125, 1500, 0, 60],
    ],
    [
      'Messages stream, OpenAI (translated from chat)',
      '/v1/messages',
      chat('gpt', { stream: true }),
      [2000, 100, 0.004125, 1500, 0, 60],
    ],
    ['chat JSON, Gemini', '/v1/chat/completions', chat('gem'), [2000, 100, 0.004125, 1500, 0, 60]],
    ['chat stream, Gemini', '/v1/chat/completions', chat('gem', streamed), [2000, 100, 0.004125, 1500, 0, 60]],
    ['Messages JSON, Anthropic (native): the issue', '/v1/messages', chat('claude'), [9012, 3, 0.002781, 9000, 0, 0]],
    [
      'Messages stream, Anthropic (native)',
      '/v1/messages',
      chat('claude', { stream: true }),
      [9012, 3, 0.002781, 9000, 0, 0],
    ],
    ['chat JSON, Anthropic (translated)', '/v1/chat/completions', chat('claude'), [9012, 3, 0.002781, 9000, 0, 0]],
    [
      'chat stream, Anthropic (translated)',
      '/v1/chat/completions',
      chat('claude', streamed),
      [9012, 3, 0.002781, 9000, 0, 0],
    ],
    [
      'Messages JSON, Anthropic, no cache price: reads at the input price',
      '/v1/messages',
      chat('claude-plain'),
      [9012, 3, 0.027081, 9000, 0, 0],
    ],
  ];
  test('every usage shape, JSON and stream, native and translated: exact tokens and exact cost', async () => {
    const sent: Array<[string, unknown, [number, number, number, number, number, number]]> = [];
    for (const [name, path, body, expected] of paths) {
      const answer = await send(path, body);
      assert.equal(answer.status, 200, `${name}: ${answer.text.slice(0, 400)}`);
      sent.push([name, answer.headers['x-request-id'], expected]);
    }
    for (const [name, id, expected] of sent) {
      const record = await recordOf(id);
      assert.deepEqual(
        [
          record.promptTokens,
          record.completionTokens,
          record.costUsd,
          record.cacheReadTokens,
          record.cacheWriteTokens,
          record.reasoningTokens,
        ],
        expected,
        name,
      );
    }
    // The access line of the issue's call carries the parts too.
    const issue = sent.find(([name]) => name.endsWith('the issue'));
    const line = gw.logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && l.request_id === issue?.[1]);
    assert.deepEqual(
      [line?.prompt_tokens, line?.cache_read_tokens, line?.cache_write_tokens, line?.reasoning_tokens, line?.cost_usd],
      [9012, 9000, undefined, undefined, 0.002781],
    );
    // `gateway usage` adds the parts up per model: 8 calls of gpt and gem (1,500 cached, 60 reasoning each: 6 + 2).
    const out: string[] = [];
    assert.equal(
      await usageCommand(usage, ['--by', 'model', '--format', 'json'], {
        out: (l) => out.push(l),
        err: (l) => out.push(l),
      }),
      0,
    );
    const rows = JSON.parse(out.join('')) as Array<Record<string, unknown>>;
    const of = (model: string) =>
      rows
        .filter((r) => r.group === model)
        .map((r) => [r.requests, r.cache_read_tokens, r.cache_write_tokens, r.reasoning_tokens, r.cost_usd]);
    assert.deepEqual(
      [of('gpt'), of('gem'), of('claude')],
      [[[6, 9_000, 0, 360, 0.02475]], [[2, 3_000, 0, 120, 0.00825]], [[4, 36_000, 0, 0, 0.011124]]],
    );
  });

  test('Anthropic cache writes: 5-minute and 1-hour writes each at their price (JSON and stream, native and translated)', async () => {
    partsUsage = {
      ...OPENAI_SHAPES,
      messages:
        '{"input_tokens":10,"cache_creation_input_tokens":3000,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":5}',
    };
    try {
      const ids: unknown[] = [];
      for (const [path, body] of [
        ['/v1/messages', chat('claude')],
        ['/v1/messages', chat('claude', { stream: true })],
        ['/v1/chat/completions', chat('claude')],
        ['/v1/chat/completions', chat('claude', streamed)],
      ] as const) {
        const answer = await send(path, body);
        assert.equal(answer.status, 200, answer.text.slice(0, 400));
        ids.push(answer.headers['x-request-id']);
      }
      for (const [i, id] of ids.entries()) {
        const record = await recordOf(id);
        // 10 × $3 + 1,000 × $3.75 + 2,000 × $6 + 5 × $15 per million.
        assert.deepEqual(
          [
            record.promptTokens,
            record.completionTokens,
            record.costUsd,
            record.cacheReadTokens,
            record.cacheWriteTokens,
          ],
          [3010, 5, 0.015855, 0, 3000],
          `call ${i}`,
        );
      }
    } finally {
      partsUsage = { ...OPENAI_SHAPES };
    }
  });

  test('a $0.03 budget runs an agent loop of cache-read calls as Anthropic bills them: ten steps, not two', async () => {
    const created = await call(`${gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: authHeaders(),
      disclosesKey: true,
      body: JSON.stringify({
        name: 'agent',
        models: ['*'],
        routes: ['messages'],
        budget: { cost_usd: 0.03, period_seconds: 86_400 },
      }),
    });
    const { id, key } = created.json as unknown as { id: string; key: string };
    const caller = authHeaders({ authorization: `Bearer ${key}` });
    const costKey = `cost:budget:key:${id}:86400000`;
    const spentMicros = () => {
      const row = gw.store.db.prepare('SELECT tat_ms FROM rate_limits WHERE key = ?').get(costKey) as
        { tat_ms: number } | undefined;
      // GCRA: each micro-dollar spent moves the theoretical arrival time on by period / budget.
      return row ? (row.tat_ms - Date.now()) / (86_400_000 / 30_000) : 0;
    };
    for (let step = 1; step <= 10; step++) {
      const answer = await send('/v1/messages', chat('claude', { stream: step % 2 === 0 }), caller);
      assert.equal(answer.status, 200, `step ${step}: ${answer.text.slice(0, 300)}`);
      // Each step settled at its real cost before the next is admitted ($0.002781 each; $0.027081 before).
      await waitForValue(
        `step ${step} settled`,
        async () => spentMicros(),
        (spent) => spent > step * 2781 - 5,
        3_000,
      );
    }
    const report = (await call(`${gw.url}/v1/?route=keys&id=${id}&action=usage`, { headers: authHeaders() }))
      .json as Record<string, unknown> & { budget: Record<string, number> };
    assert.deepEqual(
      [
        report.requests,
        report.prompt_tokens,
        report.cache_read_tokens,
        report.cache_write_tokens,
        report.reasoning_tokens,
      ],
      [10, 90_120, 90_000, 0, 0],
    );
    assert.deepEqual([report.cost_usd, report.budget.cost_left_usd], [0.02781, 0.00219]);
    // The eleventh is admitted while some is left and overdraws the budget; the twelfth is refused.
    assert.equal((await send('/v1/messages', chat('claude'), caller)).status, 200);
    await waitForValue(
      'the budget overdrawn',
      async () => spentMicros(),
      (spent) => spent > 30_000,
      3_000,
    );
    const refused = await send('/v1/messages', chat('claude'), caller);
    assert.deepEqual([refused.status, (refused as { json?: { code?: unknown } }).json?.code], [429, 'budget_exceeded']);
  });
});

/** Anthropic's cache writes: 10 uncached, 3,000 written (2,000 of them at the 1-hour TTL), 5 out: $0.015855 at Claude's prices. */
const CACHE_WRITES =
  '{"input_tokens":10,"cache_creation_input_tokens":3000,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":5}';

/** DeepSeek's chat usage: its cache reads as `prompt_cache_hit_tokens` (of the 2,000 prompt tokens), no `prompt_tokens_details`. */
const DEEPSEEK_CHAT =
  '{"prompt_tokens":2000,"completion_tokens":100,"total_tokens":2100,"prompt_cache_hit_tokens":1500,"prompt_cache_miss_tokens":500,"completion_tokens_details":{"reasoning_tokens":60}}';

/** An OpenAI-compatible upstream that reports cache writes as OpenRouter does (`prompt_tokens_details.cache_write_tokens`). */
const OPENROUTER_CHAT =
  '{"prompt_tokens":2000,"completion_tokens":100,"total_tokens":2100,"prompt_tokens_details":{"cached_tokens":1500,"cache_write_tokens":400}}';

describe('translated answers show the cache figures in each API’s own usage shape', () => {
  let oai: OpenAiUpstream;
  let claude: AnthropicUpstream;
  let gem: GeminiUpstream;
  /** The usage objects the next answers carry. */
  let partsUsage: PartsUsage;
  let gw: TestGateway;
  let usage: SqliteUsageStore;
  before(async () => {
    partsUsage = { ...OPENAI_SHAPES };
    [oai, claude, gem] = await Promise.all([startOpenAiUpstream(), startAnthropicUpstream(), startGeminiUpstream()]);
    answerWithParts({ openai: oai, anthropic: claude, gemini: gem }, () => partsUsage);
    gw = await startGateway({
      env: { PARTS_KEY: KEY },
      configFile: {
        name: 'shown.yaml',
        text: [
          'limits: { upstream_pause_max_seconds: 0 }',
          'upstreams:',
          `  - { name: oai, kind: openai, base_url: "${oai.baseUrl}", api_key_env: PARTS_KEY }`,
          `  - { name: claude, kind: anthropic, base_url: "${claude.baseUrl}", api_key_env: PARTS_KEY }`,
          `  - { name: gem, kind: gemini, base_url: "${gem.baseUrl}", api_key_env: PARTS_KEY }`,
          'models:',
          "  # translated on purpose (`responses: chat`): what is shown is the translation's usage shape",
          '  - { id: gpt, upstream: oai, upstream_model: gpt-5, responses: chat, pricing: { input_per_million: 2.5, output_per_million: 10, cache_read_per_million: 1.25 } }',
          '  - id: claude',
          '    upstream: claude',
          '    upstream_model: claude-sonnet-4-5',
          '    pricing: { input_per_million: 3, output_per_million: 15, cache_read_per_million: 0.3, cache_write_per_million: 3.75, cache_write_1h_per_million: 6 }',
          '  - { id: gem, upstream: gem, upstream_model: gemini-2.5-pro, pricing: { input_per_million: 2.5, output_per_million: 10, cache_read_per_million: 1.25 } }',
          '  - { id: routed, upstream: oai, upstream_model: anthropic/claude, responses: chat, pricing: { input_per_million: 2.5, output_per_million: 10, cache_read_per_million: 1.25, cache_write_per_million: 3.125 } }',
        ].join('\n'),
      },
    });
    usage = new SqliteUsageStore(gw.store.db);
  });
  after(async () => {
    await gw?.close();
    await Promise.all([oai?.close(), claude?.close(), gem?.close()]);
  });

  type Surface = 'chat' | 'messages' | 'responses';
  const PATHS: Record<Surface, string> = {
    chat: '/v1/chat/completions',
    messages: '/v1/messages',
    responses: '/v1/responses',
  };
  const bodyOf = (surface: Surface, model: string, stream: boolean): Record<string, unknown> => {
    if (surface === 'responses') return { model, input: 'hi', ...(stream ? { stream } : {}) };
    const body = { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 };
    if (!stream) return body;
    return surface === 'chat' ? { ...body, stream, stream_options: { include_usage: true } } : { ...body, stream };
  };
  /**
   * The usage objects the caller was shown: a JSON answer's `usage`; a chat stream's usage chunk; a Messages
   * stream's `message_start` and `message_delta` usage; a Responses stream's `response.completed` usage.
   */
  const shownUsage = (surface: Surface, stream: boolean, text: string): unknown => {
    if (!stream) return (JSON.parse(text) as { usage: unknown }).usage;
    if (surface === 'chat') {
      const chunks = dataFrames(text)
        .filter((d) => d !== '[DONE]')
        .map((d) => JSON.parse(d) as { usage?: unknown });
      return chunks.filter((c) => c.usage != null).map((c) => c.usage);
    }
    const events = namedEvents(text);
    if (surface === 'messages') {
      const start = events.find((e) => e.event === 'message_start')?.data.message as { usage: unknown };
      return { message_start: start.usage, message_delta: events.find((e) => e.event === 'message_delta')?.data.usage };
    }
    return (events.find((e) => e.event === 'response.completed')?.data.response as { usage: unknown }).usage;
  };

  // What each API shows of one call (src/providers/usage-shapes.ts; docs/usage.md, "How token parts add up").
  const CHAT_FROM_CLAUDE = {
    prompt_tokens: 9012,
    completion_tokens: 3,
    total_tokens: 9015,
    prompt_tokens_details: { cached_tokens: 9000 },
  };
  const CHAT_FROM_GEMINI = {
    prompt_tokens: 2000,
    completion_tokens: 100,
    total_tokens: 2100,
    prompt_tokens_details: { cached_tokens: 1500 },
    completion_tokens_details: { reasoning_tokens: 60 },
  };
  // Anthropic's input_tokens excludes the cache reads: 2,000 − 1,500.
  const MESSAGES_FROM_OPENAI = {
    input_tokens: 500,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 1500,
    output_tokens: 100,
  };
  // A translated upstream reports its usage only at the end: message_start shows the gateway's estimate of the
  // prompt ("hi": 1 token of text + 4 for the message), message_delta all of the upstream's usage (cumulative).
  const MESSAGE_START = {
    input_tokens: 5,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: 0,
  };
  const MESSAGES_STREAM_FROM_OPENAI = { message_start: MESSAGE_START, message_delta: MESSAGES_FROM_OPENAI };
  const RESPONSES_FROM_OPENAI = {
    input_tokens: 2000,
    input_tokens_details: { cached_tokens: 1500 },
    output_tokens: 100,
    output_tokens_details: { reasoning_tokens: 60 },
    total_tokens: 2100,
  };
  const RESPONSES_FROM_CLAUDE = {
    input_tokens: 9012,
    input_tokens_details: { cached_tokens: 9000 },
    output_tokens: 3,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 9015,
  };
  const GPT_RECORD = [2000, 100, 0.004125, 1500, 0, 60];
  const CLAUDE_RECORD = [9012, 3, 0.002781, 9000, 0, 0];
  const CHAT_WRITES = {
    prompt_tokens: 3010,
    completion_tokens: 5,
    total_tokens: 3015,
    prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 3000 },
  };
  const RESPONSES_WRITES = {
    input_tokens: 3010,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 3000 },
    output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 3015,
  };
  const WRITES_RECORD = [3010, 5, 0.015855, 0, 3000, 0];
  const MESSAGES_FROM_OPENROUTER = {
    input_tokens: 100,
    cache_creation_input_tokens: 400,
    cache_read_input_tokens: 1500,
    output_tokens: 100,
  };
  // 100 × $2.5 + 400 × $3.125 + 1,500 × $1.25 + 100 × $10 per million.
  const OPENROUTER_RECORD = [2000, 100, 0.004375, 1500, 400, 0];
  // Anthropic's message_delta figures are cumulative: after a server tool ran, 40 uncached input tokens, not 12.
  const CUMULATIVE = {
    messagesDelta:
      '{"input_tokens":40,"cache_creation_input_tokens":0,"cache_read_input_tokens":9000,"output_tokens":3}',
  };
  const CHAT_CUMULATIVE = {
    prompt_tokens: 9040,
    completion_tokens: 3,
    total_tokens: 9043,
    prompt_tokens_details: { cached_tokens: 9000 },
  };
  const RESPONSES_CUMULATIVE = {
    input_tokens: 9040,
    input_tokens_details: { cached_tokens: 9000 },
    output_tokens: 3,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 9043,
  };
  // 40 × $3 + 9,000 × $0.30 + 3 × $15 per million.
  const CUMULATIVE_RECORD = [9040, 3, 0.002865, 9000, 0, 0];

  /** [name, the upstreams' usage, surface, model, stream, what the caller sees, the record: prompt, completion, cost, cache read, cache write, reasoning]. */
  const rows: Array<[string, Partial<PartsUsage>, Surface, string, boolean, unknown, number[]]> = [
    ['chat JSON from Anthropic', {}, 'chat', 'claude', false, CHAT_FROM_CLAUDE, CLAUDE_RECORD],
    ['chat stream from Anthropic', {}, 'chat', 'claude', true, [CHAT_FROM_CLAUDE], CLAUDE_RECORD],
    ['chat JSON from Gemini', {}, 'chat', 'gem', false, CHAT_FROM_GEMINI, GPT_RECORD],
    ['chat stream from Gemini', {}, 'chat', 'gem', true, [CHAT_FROM_GEMINI], GPT_RECORD],
    ['Messages JSON from OpenAI chat', {}, 'messages', 'gpt', false, MESSAGES_FROM_OPENAI, GPT_RECORD],
    ['Messages stream from OpenAI chat', {}, 'messages', 'gpt', true, MESSAGES_STREAM_FROM_OPENAI, GPT_RECORD],
    ['Messages JSON from Gemini', {}, 'messages', 'gem', false, MESSAGES_FROM_OPENAI, GPT_RECORD],
    ['Messages stream from Gemini', {}, 'messages', 'gem', true, MESSAGES_STREAM_FROM_OPENAI, GPT_RECORD],
    ['Responses JSON from OpenAI chat', {}, 'responses', 'gpt', false, RESPONSES_FROM_OPENAI, GPT_RECORD],
    ['Responses stream from OpenAI chat', {}, 'responses', 'gpt', true, RESPONSES_FROM_OPENAI, GPT_RECORD],
    ['Responses JSON from Anthropic', {}, 'responses', 'claude', false, RESPONSES_FROM_CLAUDE, CLAUDE_RECORD],
    ['Responses stream from Anthropic', {}, 'responses', 'claude', true, RESPONSES_FROM_CLAUDE, CLAUDE_RECORD],
    ['Responses JSON from Gemini', {}, 'responses', 'gem', false, RESPONSES_FROM_OPENAI, GPT_RECORD],
    ['Responses stream from Gemini', {}, 'responses', 'gem', true, RESPONSES_FROM_OPENAI, GPT_RECORD],
    // Anthropic's cache writes: chat and Responses have no field of their own for them (OpenRouter's name in the details).
    [
      'chat JSON from Anthropic, cache writes',
      { messages: CACHE_WRITES },
      'chat',
      'claude',
      false,
      CHAT_WRITES,
      WRITES_RECORD,
    ],
    [
      'chat stream from Anthropic, cache writes',
      { messages: CACHE_WRITES },
      'chat',
      'claude',
      true,
      [CHAT_WRITES],
      WRITES_RECORD,
    ],
    [
      'Responses JSON from Anthropic, cache writes',
      { messages: CACHE_WRITES },
      'responses',
      'claude',
      false,
      RESPONSES_WRITES,
      WRITES_RECORD,
    ],
    [
      'Responses stream from Anthropic, cache writes',
      { messages: CACHE_WRITES },
      'responses',
      'claude',
      true,
      RESPONSES_WRITES,
      WRITES_RECORD,
    ],
    // An OpenAI-compatible upstream's cache writes (OpenRouter) as Anthropic's cache_creation_input_tokens (no write price: at the input price).
    [
      'Messages JSON from an OpenRouter-shaped chat',
      { chat: OPENROUTER_CHAT },
      'messages',
      'routed',
      false,
      MESSAGES_FROM_OPENROUTER,
      OPENROUTER_RECORD,
    ],
    [
      'Messages stream from an OpenRouter-shaped chat',
      { chat: OPENROUTER_CHAT },
      'messages',
      'routed',
      true,
      { message_start: MESSAGE_START, message_delta: MESSAGES_FROM_OPENROUTER },
      OPENROUTER_RECORD,
    ],
    [
      'Responses JSON from an OpenRouter-shaped chat',
      { chat: OPENROUTER_CHAT },
      'responses',
      'routed',
      false,
      {
        ...RESPONSES_FROM_OPENAI,
        input_tokens_details: { cached_tokens: 1500, cache_write_tokens: 400 },
        output_tokens_details: { reasoning_tokens: 0 },
      },
      OPENROUTER_RECORD,
    ],
    // The figures of an Anthropic stream's last message_delta are the call's (cumulative), input and cache included.
    [
      'chat stream from Anthropic, cumulative message_delta',
      CUMULATIVE,
      'chat',
      'claude',
      true,
      [CHAT_CUMULATIVE],
      CUMULATIVE_RECORD,
    ],
    [
      'Responses stream from Anthropic, cumulative message_delta',
      CUMULATIVE,
      'responses',
      'claude',
      true,
      RESPONSES_CUMULATIVE,
      CUMULATIVE_RECORD,
    ],
    // DeepSeek's shape: chat passes its usage through as it came; the cache reads are counted, and shown by the translations.
    [
      'chat JSON from DeepSeek (passed through)',
      { chat: DEEPSEEK_CHAT },
      'chat',
      'gpt',
      false,
      JSON.parse(DEEPSEEK_CHAT),
      GPT_RECORD,
    ],
    [
      'chat stream from DeepSeek (passed through)',
      { chat: DEEPSEEK_CHAT },
      'chat',
      'gpt',
      true,
      [JSON.parse(DEEPSEEK_CHAT)],
      GPT_RECORD,
    ],
    [
      'Messages JSON from DeepSeek',
      { chat: DEEPSEEK_CHAT },
      'messages',
      'gpt',
      false,
      MESSAGES_FROM_OPENAI,
      GPT_RECORD,
    ],
    [
      'Messages stream from DeepSeek',
      { chat: DEEPSEEK_CHAT },
      'messages',
      'gpt',
      true,
      MESSAGES_STREAM_FROM_OPENAI,
      GPT_RECORD,
    ],
    [
      'Responses JSON from DeepSeek',
      { chat: DEEPSEEK_CHAT },
      'responses',
      'gpt',
      false,
      RESPONSES_FROM_OPENAI,
      GPT_RECORD,
    ],
    [
      'Responses stream from DeepSeek',
      { chat: DEEPSEEK_CHAT },
      'responses',
      'gpt',
      true,
      RESPONSES_FROM_OPENAI,
      GPT_RECORD,
    ],
  ];
  const recorded: Array<[string, unknown, number[]]> = [];
  for (const [name, shapes, surface, model, stream, shown, record] of rows) {
    test(`${name}: the caller sees the exact parts`, async () => {
      partsUsage = { ...OPENAI_SHAPES, ...shapes };
      const body = JSON.stringify(bodyOf(surface, model, stream));
      const answer = stream
        ? await readStream(`${gw.url}${PATHS[surface]}`, body, authHeaders())
        : await call(`${gw.url}${PATHS[surface]}`, { method: 'POST', headers: authHeaders(), body });
      assert.equal(answer.status, 200, answer.text.slice(0, 400));
      recorded.push([name, answer.headers['x-request-id'], record]);
      assert.deepEqual(shownUsage(surface, stream, answer.text), shown);
    });
  }
  test('and each of those calls is recorded with the exact parts and the exact cost', async () => {
    assert.equal(recorded.length, rows.length);
    const records = await waitForValue(
      'the usage records',
      () => usage.recent(1_000, false),
      (all) => recorded.every(([, id]) => all.some((r) => r.requestId === id)),
      5_000,
    );
    const of = (id: unknown) => records.find((x) => x.requestId === id) as UsageRecord;
    const actual = recorded.map(([name, id]) => [
      name,
      ...((r) => [
        r.promptTokens,
        r.completionTokens,
        r.costUsd,
        r.cacheReadTokens,
        r.cacheWriteTokens,
        r.reasoningTokens,
      ])(of(id)),
    ]);
    assert.deepEqual(
      actual,
      recorded.map(([name, , expected]) => [name, ...expected]),
    );
  });
});
