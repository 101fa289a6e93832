/**
 * Prompt-cache and reasoning tokens priced as providers bill them (issue 31): every provider's usage shape (OpenAI
 * chat, OpenAI Responses, Anthropic Messages, Gemini; JSON and stream; native and translated) through the real
 * gateway in front of a real upstream, with the exact tokens and cost recorded, and a cost budget spent by an
 * agent loop of cache-read-heavy calls as the provider would bill it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { authHeaders, startGateway, type TestGateway } from './helpers/gateway.js';
import { call } from './helpers/http.js';
import { readStream } from './helpers/sse-client.js';
import { startPartsUpstream, type PartsUpstream, type PartsUsage } from './helpers/mock-token-parts-upstream.js';
import { waitForValue } from './helpers/wait.js';
import { SqliteUsageStore } from '../src/store/sqlite/sqlite-usage.js';
import type { UsageRecord } from '../src/store/contract.js';
import { usageCommand } from '../src/cli/usage-command.js';
import { checkedUsage, withParts } from '../src/providers/usage-figures.js';
import { USAGE_ANOMALIES, type Usage } from '../src/providers/contract.js';
import { costUsd } from '../src/core/pricing.js';

const KEY = 'sk-token-parts-upstream-0123456789';

/** The issue's own call: 12 uncached input tokens, 9,000 read from the cache, 3 out ($0.002781 at Claude's prices). */
const AGENT_STEP = '{"input_tokens":12,"cache_read_input_tokens":9000,"output_tokens":3}';

/** 2,000 input tokens of which 1,500 cached, 100 out of which 60 reasoning: $0.004125 at $2.50 / $1.25 / $10. */
const OPENAI_SHAPES: PartsUsage = {
  chat: '{"prompt_tokens":2000,"completion_tokens":100,"total_tokens":2100,"prompt_tokens_details":{"cached_tokens":1500},"completion_tokens_details":{"reasoning_tokens":60}}',
  responses: '{"input_tokens":2000,"input_tokens_details":{"cached_tokens":1500},"output_tokens":100,"output_tokens_details":{"reasoning_tokens":60},"total_tokens":2100}',
  messages: AGENT_STEP,
  gemini: '{"promptTokenCount":2000,"cachedContentTokenCount":1500,"candidatesTokenCount":40,"thoughtsTokenCount":60,"totalTokenCount":2100}',
};

describe('token parts: bounded by what they are parts of', () => {
  test("an upstream's parts out of range are checked, flagged and never more than the prompt or completion", () => {
    const raw = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 1e300 }, completion_tokens_details: { reasoning_tokens: -3 } };
    const usage = checkedUsage(raw as unknown as Usage);
    assert.deepEqual(JSON.parse(JSON.stringify(usage)), { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cache_read_tokens: 10 });
    assert.deepEqual(usage[USAGE_ANOMALIES], ['too_large', 'negative']);
    const parts = withParts({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }, { cacheRead: 8, cacheWrite: 5, cacheWrite1h: 9, reasoning: 7 });
    assert.deepEqual(parts, { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cache_read_tokens: 8, cache_write_tokens: 2, cache_write_1h_tokens: 2, reasoning_tokens: 5 });
    // No token is billed twice, none is billed below its configured price: 8 reads, 2 one-hour writes, 5 out.
    assert.equal(costUsd(parts, { inputPerMillion: 3, outputPerMillion: 15, cacheReadPerMillion: 0.3 }), 0.0000834);
    // A part set by a provider without the check is caught at the gate too.
    assert.deepEqual({ ...checkedUsage({ prompt_tokens: 4, completion_tokens: 0, total_tokens: 4, cache_read_tokens: 9 }) }, { prompt_tokens: 4, completion_tokens: 0, total_tokens: 4, cache_read_tokens: 4 });
  });
});

describe('token parts and cost as providers bill them', () => {
  let up: PartsUpstream;
  let gw: TestGateway;
  let usage: SqliteUsageStore;
  before(async () => {
    up = await startPartsUpstream({ ...OPENAI_SHAPES });
    gw = await startGateway({
      env: { PARTS_KEY: KEY },
      configFile: {
        name: 'parts.yaml',
        text: [
          'limits: { upstream_pause_max_seconds: 0 }',
          'upstreams:',
          `  - { name: oai, kind: openai, base_url: "${up.origin}/openai/v1", api_key_env: PARTS_KEY }`,
          `  - { name: claude, kind: anthropic, base_url: "${up.origin}/anthropic/v1", api_key_env: PARTS_KEY }`,
          `  - { name: gem, kind: gemini, base_url: "${up.origin}/gemini/v1beta", api_key_env: PARTS_KEY }`,
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
    await up?.close();
  });

  const send = (path: string, body: Record<string, unknown>, headers: Record<string, string> = authHeaders()) =>
    body.stream === true ? readStream(`${gw.url}${path}`, JSON.stringify(body), headers) : call(`${gw.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  const recordOf = async (requestId: unknown): Promise<UsageRecord> =>
    (await waitForValue(`the usage record of ${String(requestId)}`, async () => (await usage.recent(1_000, false)).find((r) => r.requestId === requestId), (r) => r !== undefined, 5_000)) as UsageRecord;
  const chat = (model: string, extra: Record<string, unknown> = {}) => ({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 16, ...extra });
  const streamed = { stream: true, stream_options: { include_usage: true } };
  const native = { tools: [{ type: 'web_search' }] };

  /** [path, body, what the record says: prompt, completion, cost, cache read, cache write, reasoning] for every path a usage enters by. */
  const paths: Array<[string, string, Record<string, unknown>, [number, number, number, number, number, number]]> = [
    ['chat JSON, OpenAI', '/v1/chat/completions', chat('gpt'), [2000, 100, 0.004125, 1500, 0, 60]],
    ['chat stream, OpenAI', '/v1/chat/completions', chat('gpt', streamed), [2000, 100, 0.004125, 1500, 0, 60]],
    ['Responses JSON, OpenAI (native)', '/v1/responses', { model: 'gpt', input: 'hi', ...native }, [2000, 100, 0.004125, 1500, 0, 60]],
    ['Responses stream, OpenAI (native)', '/v1/responses', { model: 'gpt', input: 'hi', ...native, stream: true }, [2000, 100, 0.004125, 1500, 0, 60]],
    ['Responses JSON, OpenAI (translated from chat)', '/v1/responses', { model: 'gpt', input: 'hi' }, [2000, 100, 0.004125, 1500, 0, 60]],
    ['Messages stream, OpenAI (translated from chat)', '/v1/messages', chat('gpt', { stream: true }), [2000, 100, 0.004125, 1500, 0, 60]],
    ['chat JSON, Gemini', '/v1/chat/completions', chat('gem'), [2000, 100, 0.004125, 1500, 0, 60]],
    ['chat stream, Gemini', '/v1/chat/completions', chat('gem', streamed), [2000, 100, 0.004125, 1500, 0, 60]],
    ['Messages JSON, Anthropic (native): the issue', '/v1/messages', chat('claude'), [9012, 3, 0.002781, 9000, 0, 0]],
    ['Messages stream, Anthropic (native)', '/v1/messages', chat('claude', { stream: true }), [9012, 3, 0.002781, 9000, 0, 0]],
    ['chat JSON, Anthropic (translated)', '/v1/chat/completions', chat('claude'), [9012, 3, 0.002781, 9000, 0, 0]],
    ['chat stream, Anthropic (translated)', '/v1/chat/completions', chat('claude', streamed), [9012, 3, 0.002781, 9000, 0, 0]],
    ['Messages JSON, Anthropic, no cache price: reads at the input price', '/v1/messages', chat('claude-plain'), [9012, 3, 0.027081, 9000, 0, 0]],
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
      assert.deepEqual([record.promptTokens, record.completionTokens, record.costUsd, record.cacheReadTokens, record.cacheWriteTokens, record.reasoningTokens], expected, name);
    }
    // The access line of the issue's call carries the parts too.
    const issue = sent.find(([name]) => name.endsWith('the issue'));
    const line = gw.logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request' && l.request_id === issue?.[1]);
    assert.deepEqual([line?.prompt_tokens, line?.cache_read_tokens, line?.cache_write_tokens, line?.reasoning_tokens, line?.cost_usd], [9012, 9000, undefined, undefined, 0.002781]);
    // `gateway usage` adds the parts up per model: 8 calls of gpt and gem (1,500 cached, 60 reasoning each: 6 + 2).
    const out: string[] = [];
    assert.equal(await usageCommand(usage, ['--by', 'model', '--format', 'json'], { out: (l) => out.push(l), err: (l) => out.push(l) }), 0);
    const rows = JSON.parse(out.join('')) as Array<Record<string, unknown>>;
    const of = (model: string) => rows.filter((r) => r.group === model).map((r) => [r.requests, r.cache_read_tokens, r.cache_write_tokens, r.reasoning_tokens, r.cost_usd]);
    assert.deepEqual([of('gpt'), of('gem'), of('claude')], [[[6, 9_000, 0, 360, 0.02475]], [[2, 3_000, 0, 120, 0.00825]], [[4, 36_000, 0, 0, 0.011124]]]);
  });

  test('Anthropic cache writes: 5-minute and 1-hour writes each at their price (JSON and stream, native and translated)', async () => {
    up.usage = {
      ...OPENAI_SHAPES,
      messages: '{"input_tokens":10,"cache_creation_input_tokens":3000,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":5}',
    };
    try {
      const ids: unknown[] = [];
      for (const [path, body] of [['/v1/messages', chat('claude')], ['/v1/messages', chat('claude', { stream: true })], ['/v1/chat/completions', chat('claude')], ['/v1/chat/completions', chat('claude', streamed)]] as const) {
        const answer = await send(path, body);
        assert.equal(answer.status, 200, answer.text.slice(0, 400));
        ids.push(answer.headers['x-request-id']);
      }
      for (const [i, id] of ids.entries()) {
        const record = await recordOf(id);
        // 10 × $3 + 1,000 × $3.75 + 2,000 × $6 + 5 × $15 per million.
        assert.deepEqual([record.promptTokens, record.completionTokens, record.costUsd, record.cacheReadTokens, record.cacheWriteTokens], [3010, 5, 0.015855, 0, 3000], `call ${i}`);
      }
    } finally {
      up.usage = { ...OPENAI_SHAPES };
    }
  });

  test('a $0.03 budget runs an agent loop of cache-read calls as Anthropic bills them: ten steps, not two', async () => {
    const created = await call(`${gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: authHeaders(),
      disclosesKey: true,
      body: JSON.stringify({ name: 'agent', models: ['*'], routes: ['messages'], budget: { cost_usd: 0.03, period_seconds: 86_400 } }),
    });
    const { id, key } = created.json as unknown as { id: string; key: string };
    const caller = authHeaders({ authorization: `Bearer ${key}` });
    const costKey = `cost:budget:key:${id}:86400000`;
    const spentMicros = () => {
      const row = gw.store.db.prepare('SELECT tat_ms FROM rate_limits WHERE key = ?').get(costKey) as { tat_ms: number } | undefined;
      // GCRA: each micro-dollar spent moves the theoretical arrival time on by period / budget.
      return row ? (row.tat_ms - Date.now()) / (86_400_000 / 30_000) : 0;
    };
    for (let step = 1; step <= 10; step++) {
      const answer = await send('/v1/messages', chat('claude', { stream: step % 2 === 0 }), caller);
      assert.equal(answer.status, 200, `step ${step}: ${answer.text.slice(0, 300)}`);
      // Each step settled at its real cost before the next is admitted ($0.002781 each; $0.027081 before).
      await waitForValue(`step ${step} settled`, async () => spentMicros(), (spent) => spent > step * 2781 - 5, 3_000);
    }
    const report = (await call(`${gw.url}/v1/?route=keys&id=${id}&action=usage`, { headers: authHeaders() })).json as Record<string, unknown> & { budget: Record<string, number> };
    assert.deepEqual([report.requests, report.prompt_tokens, report.cache_read_tokens, report.cache_write_tokens, report.reasoning_tokens], [10, 90_120, 90_000, 0, 0]);
    assert.deepEqual([report.cost_usd, report.budget.cost_left_usd], [0.02781, 0.00219]);
    // The eleventh is admitted while some is left and overdraws the budget; the twelfth is refused.
    assert.equal((await send('/v1/messages', chat('claude'), caller)).status, 200);
    await waitForValue('the budget overdrawn', async () => spentMicros(), (spent) => spent > 30_000, 3_000);
    const refused = await send('/v1/messages', chat('claude'), caller);
    assert.deepEqual([refused.status, (refused as { json?: { code?: unknown } }).json?.code], [429, 'budget_exceeded']);
  });
});
