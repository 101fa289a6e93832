/**
 * Prompt caching seen where operators look (issue 31): what caching saved, priced when the call is and kept in its
 * usage record; the cache-read share and the savings in `gateway usage`, the keys API's usage answer and the
 * dashboard (its JSON and the page in headless Chromium); `/metrics` counting tokens by kind. A real gateway in
 * front of a real upstream whose usage figures the test sets (test/helpers/upstreams/raw-usage.ts).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../helpers/upstreams/anthropic.js';
import { answerWithParts, type PartsUsage } from '../helpers/upstreams/raw-usage.js';
import { waitForValue } from '../helpers/wait.js';
import { chromiumSkipReason, launchChromium } from '../helpers/services.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import type { UsageRecord } from '../../src/store/store-contract.js';
import { usageCommand } from '../../src/cli/usage-command.js';
import { cacheSavingsUsd } from '../../src/core/models/pricing.js';
import { TEST_ARTIFACTS } from '../helpers/paths.js';

const KEY = 'sk-cache-savings-upstream-0123456789';
const ARTIFACTS = TEST_ARTIFACTS;

/** The agent step: 12 uncached input tokens, 9,000 read from the cache, 3 out. */
const READS = '{"input_tokens":12,"cache_read_input_tokens":9000,"output_tokens":3}';
/** A cache written and not read: 10 uncached, 1,000 written for 5 minutes and 2,000 for an hour, 5 out. */
const WRITES =
  '{"input_tokens":10,"cache_creation_input_tokens":3000,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":5}';
/** OpenAI: 2,000 input of which 1,500 cached, 100 out of which 60 reasoning. */
const CHAT =
  '{"prompt_tokens":2000,"completion_tokens":100,"total_tokens":2100,"prompt_tokens_details":{"cached_tokens":1500},"completion_tokens_details":{"reasoning_tokens":60}}';

const shapes = (messages: string): PartsUsage => ({ chat: CHAT, responses: '{}', messages, gemini: '{}' });
const CLAUDE_PRICES =
  '{ input_per_million: 3, output_per_million: 15, cache_read_per_million: 0.3, cache_write_per_million: 3.75, cache_write_1h_per_million: 6 }';

describe('what caching saved: priced per call', () => {
  test('reads save (input − read price), writes cost their premium over input, a left-out price saves nothing', () => {
    const prices = {
      inputPerMillion: 3,
      outputPerMillion: 15,
      cacheReadPerMillion: 0.3,
      cacheWritePerMillion: 3.75,
      cacheWrite1hPerMillion: 6,
    };
    const usage = (read: number, write: number, write1h: number) => ({
      prompt_tokens: 10 + read + write,
      completion_tokens: 5,
      total_tokens: 15 + read + write,
      cache_read_tokens: read,
      cache_write_tokens: write,
      cache_write_1h_tokens: write1h,
    });
    assert.equal(cacheSavingsUsd(usage(9000, 0, 0), prices), 0.0243);
    // 1,000 five-minute writes at $0.75 above input, 2,000 one-hour writes at $3 above: −$0.00675, not hidden.
    assert.equal(cacheSavingsUsd(usage(0, 3000, 2000), prices), -0.00675);
    assert.equal(cacheSavingsUsd(usage(9000, 3000, 2000), prices), 0.01755);
    assert.equal(cacheSavingsUsd(usage(9000, 3000, 2000), { inputPerMillion: 3, outputPerMillion: 15 }), 0);
    assert.equal(cacheSavingsUsd({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }, prices), 0);
    // 1-hour writes without a 1-hour price are priced as 5-minute writes.
    assert.equal(cacheSavingsUsd(usage(0, 3000, 2000), { ...prices, cacheWrite1hPerMillion: undefined }), -0.00225);
    // A saving too small to show is 0, never −0.
    assert.ok(
      Object.is(
        cacheSavingsUsd(usage(0, 1, 0), { inputPerMillion: 3, outputPerMillion: 15, cacheWritePerMillion: 3.000001 }),
        0,
      ),
    );
  });
});

describe('prompt caching where operators look', () => {
  let oai: OpenAiUpstream;
  let claude: AnthropicUpstream;
  /** The usage objects the next answers carry. */
  let partsUsage: PartsUsage;
  let gw: TestGateway;
  let usage: SqliteUsageStore;
  let keyId = '';
  let keyHeaders: Record<string, string> = {};
  const ids: Record<string, unknown> = {};

  before(async () => {
    partsUsage = shapes(READS);
    [oai, claude] = await Promise.all([startOpenAiUpstream(), startAnthropicUpstream()]);
    answerWithParts({ openai: oai, anthropic: claude }, () => partsUsage);
    gw = await startGateway({
      env: { PARTS_KEY: KEY },
      configFile: {
        name: 'savings.yaml',
        text: [
          'limits: { upstream_pause_max_seconds: 0 }',
          'upstreams:',
          `  - { name: oai, kind: openai, base_url: "${oai.baseUrl}", api_key_env: PARTS_KEY }`,
          `  - { name: claude, kind: anthropic, base_url: "${claude.baseUrl}", api_key_env: PARTS_KEY }`,
          'models:',
          `  - { id: claude, upstream: claude, upstream_model: claude-sonnet-4-5, pricing: ${CLAUDE_PRICES} }`,
          `  - { id: claude-writes, upstream: claude, upstream_model: claude-sonnet-4-5, pricing: ${CLAUDE_PRICES} }`,
          // Without cache prices, cache reads cost what input costs: nothing saved.
          '  - { id: claude-plain, upstream: claude, upstream_model: claude-sonnet-4-5, pricing: { input_per_million: 3, output_per_million: 15 } }',
          '  - { id: claude-free, upstream: claude, upstream_model: claude-private-finetune }',
          '  - { id: gpt, upstream: oai, upstream_model: gpt-5, pricing: { input_per_million: 2.5, output_per_million: 10, cache_read_per_million: 1.25 } }',
        ].join('\n'),
      },
    });
    usage = new SqliteUsageStore(gw.store.db);
    const created = await call(`${gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: authHeaders(),
      disclosesKey: true,
      body: JSON.stringify({ name: 'agent', models: ['*'], routes: ['messages', 'chat'] }),
    });
    const { id, key } = created.json as unknown as { id: string; key: string };
    keyId = id;
    keyHeaders = authHeaders({ authorization: `Bearer ${key}` });
    // The calls every test below reads: the key makes the two Claude calls (one that reads the cache, one that
    // writes it), the admin the rest.
    const send = async (name: string, usageJson: string, path: string, model: string, headers = authHeaders()) => {
      partsUsage = shapes(usageJson);
      const answer = await call(`${gw.url}${path}`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 }),
      });
      assert.equal(answer.status, 200, `${name}: ${answer.text.slice(0, 300)}`);
      ids[name] = answer.headers['x-request-id'];
    };
    await send('reads', READS, '/v1/messages', 'claude', keyHeaders);
    await send('writes', WRITES, '/v1/chat/completions', 'claude-writes', keyHeaders);
    await send('plain', READS, '/v1/messages', 'claude-plain');
    await send('free', READS, '/v1/messages', 'claude-free');
    await send('openai', CHAT, '/v1/chat/completions', 'gpt');
    const unknown = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(unknown.status, 404, unknown.text.slice(0, 300));
    ids.nope = unknown.headers['x-request-id'];
  });
  after(async () => {
    await gw?.close();
    await Promise.all([oai?.close(), claude?.close()]);
  });

  const recordOf = async (requestId: unknown): Promise<UsageRecord> =>
    (await waitForValue(
      `the usage record of ${String(requestId)}`,
      async () => (await usage.recent(1_000, false)).find((r) => r.requestId === requestId),
      (r) => r !== undefined,
      5_000,
    )) as UsageRecord;

  test('each usage record carries what caching saved on its call, at its prices: negative for writes never read, null without prices', async () => {
    const expected: Record<string, [number | null, number | null, number | null, number | null]> = {
      // [cost, savings, cache reads, cache writes]: 9,000 reads × ($3 − $0.30) per million saved.
      reads: [0.002781, 0.0243, 9000, 0],
      // 10 × $3 + 1,000 × $3.75 + 2,000 × $6 + 5 × $15; saved −(1,000 × $0.75 + 2,000 × $3).
      writes: [0.015855, -0.00675, 0, 3000],
      plain: [0.027081, 0, 9000, 0],
      free: [null, null, 9000, 0],
      // 1,500 cached × ($2.50 − $1.25).
      openai: [0.004125, 0.001875, 1500, 0],
    };
    for (const [name, values] of Object.entries(expected)) {
      const record = await recordOf(ids[name]);
      assert.deepEqual(
        [record.costUsd, record.cacheSavingsUsd, record.cacheReadTokens, record.cacheWriteTokens],
        values,
        name,
      );
    }
  });

  test('gateway usage: the cache-read share and what caching saved per group, in the table, CSV and JSON', async () => {
    await recordOf(ids.nope);
    const run = async (args: string[]) => {
      const lines: string[] = [];
      assert.equal(
        await usageCommand(usage, args, { out: (l) => lines.push(l), err: (l) => lines.push(`ERR ${l}`) }),
        0,
      );
      return lines;
    };
    const json = JSON.parse((await run(['--by', 'model', '--format', 'json'])).join('')) as Array<
      Record<string, unknown>
    >;
    const of = (model: string) =>
      json
        .filter((r) => r.group === model)
        .map((r) => [r.prompt_tokens, r.cache_read_tokens, r.cache_read_share, r.cost_usd, r.cache_savings_usd]);
    assert.deepEqual(['claude', 'claude-writes', 'claude-plain', 'claude-free', 'gpt'].map(of), [
      [[9012, 9000, 0.9987, 0.002781, 0.0243]],
      [[3010, 0, 0, 0.015855, -0.00675]],
      [[9012, 9000, 0.9987, 0.027081, 0]],
      [[9012, 9000, 0.9987, 0, 0]],
      [[2000, 1500, 0.75, 0.004125, 0.001875]],
    ]);

    const csv = await run(['--by', 'caller', '--format', 'csv']);
    assert.equal(
      csv[0],
      'caller,requests,errors,prompt_tokens,completion_tokens,cache_read_tokens,cache_write_tokens,reasoning_tokens,cache_read_share,cost_usd,cache_savings_usd,avg_latency_ms',
    );
    // The key's two calls: 9,000 of 12,022 input tokens read from the cache; $0.0243 − $0.00675 saved.
    assert.match(
      csv.find((l) => l.startsWith(`key:${keyId},`)) ?? '',
      new RegExp(`^key:${keyId},2,0,12022,8,9000,3000,0,0\\.7486,0\\.018636,0\\.01755,[0-9.]+$`),
    );

    const table = await run(['--by', 'model']);
    const header = table[0] ?? '';
    assert.match(
      header,
      /^model\s+requests\s+errors\s+prompt\s+completion\s+cache_read\s+cache_write\s+reasoning\s+read_share\s+cost_usd\s+saved_usd\s+avg_ms$/,
    );
    const row = (model: string) => (table.find((l) => l.startsWith(`${model} `)) ?? '').split(/\s+/).slice(0, 11);
    assert.deepEqual(row('claude'), ['claude', '1', '0', '9012', '3', '9000', '0', '0', '99.9%', '0.002781', '0.0243']);
    assert.deepEqual(row('claude-writes'), [
      'claude-writes',
      '1',
      '0',
      '3010',
      '5',
      '0',
      '3000',
      '0',
      '0.0%',
      '0.015855',
      '-0.00675',
    ]);
    assert.deepEqual(row('gpt'), ['gpt', '1', '0', '2000', '100', '1500', '0', '60', '75.0%', '0.004125', '0.001875']);
    // A row without input tokens (the keys route's own calls) has no share.
    // A group without input tokens (calls refused before any upstream) has no share.
    assert.deepEqual([row('nope')[3], row('nope')[8]], ['0', '-']);
    assert.ok(
      table.every((l) => l.length <= 130),
      `the table is at most 130 columns wide:\n${table.join('\n')}`,
    );
  });

  test("the keys API's usage answer: the key's cache-read share and what caching saved", async () => {
    await recordOf(ids.writes);
    const report = (await call(`${gw.url}/v1/?route=keys&id=${keyId}&action=usage`, { headers: authHeaders() }))
      .json as Record<string, unknown>;
    assert.deepEqual(
      [
        report.requests,
        report.prompt_tokens,
        report.cache_read_tokens,
        report.cache_write_tokens,
        report.cache_read_share,
        report.cost_usd,
        report.cache_savings_usd,
      ],
      [2, 12_022, 9_000, 3_000, 0.7486, 0.018636, 0.01755],
    );
  });

  test('/metrics counts every token once by kind: uncached input, cache reads, cache writes, output, reasoning', async () => {
    await recordOf(ids.openai);
    const text = (await call(`${gw.url}/metrics`, { headers: authHeaders() })).text;
    const kinds = (model: string) =>
      ['input', 'cache_read', 'cache_write', 'output', 'reasoning'].map((kind) => {
        const line = text
          .split('\n')
          .find(
            (l) =>
              l.startsWith('llmgw_tokens_by_kind_total{') &&
              l.includes(`model="${model}"`) &&
              l.includes(`kind="${kind}"`),
          );
        return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
      });
    assert.deepEqual(kinds('claude'), [12, 9000, 0, 3, 0]);
    assert.deepEqual(kinds('claude-writes'), [10, 0, 3000, 5, 0]);
    // 2,000 in (1,500 cached), 100 out (60 reasoning): 500 + 1,500 + 40 + 60 = 2,100, the call's total.
    assert.deepEqual(kinds('gpt'), [500, 1500, 0, 40, 60]);
    assert.match(text, /# HELP llmgw_tokens_by_kind_total .*add up to prompt \+ completion/);
    assert.match(text, /# TYPE llmgw_tokens_by_kind_total counter/);
  });

  // Every call: 32,046 input tokens, 28,500 of them cache reads; $0.0243 − $0.00675 + $0.001875 saved.
  const TOTAL_SHARE = 0.8893;
  const TOTAL_SAVED = 0.019425;

  test("the dashboard's overview: the share and the savings in the totals and per model and key", async () => {
    await recordOf(ids.nope);
    const overview = (await call(`${gw.url}/dashboard/api/overview?window=1h`, { headers: authHeaders() }))
      .json as unknown as {
      totals: { promptTokens: number; cacheReadTokens: number; cacheReadShare: number | null; cacheSavingsUsd: number };
      byModel: Array<{ group: string; cacheReadShare: number | null; cacheSavingsUsd: number }>;
      byCaller: Array<{ group: string; cacheReadShare: number | null; cacheSavingsUsd: number }>;
    };
    assert.deepEqual(
      [
        overview.totals.promptTokens,
        overview.totals.cacheReadTokens,
        overview.totals.cacheReadShare,
        overview.totals.cacheSavingsUsd,
      ],
      [32_046, 28_500, TOTAL_SHARE, TOTAL_SAVED],
    );
    const claude = overview.byModel.find((r) => r.group === 'claude-writes');
    assert.deepEqual([claude?.cacheReadShare, claude?.cacheSavingsUsd], [0, -0.00675]);
    const key = overview.byCaller.find((r) => r.group === `key:${keyId}`);
    assert.deepEqual([key?.cacheReadShare, key?.cacheSavingsUsd], [0.7486, 0.01755]);
  });

  test('the dashboard page shows the share and the savings (headless Chromium)', async (t) => {
    const skip = await chromiumSkipReason();
    if (skip) return t.skip(skip);
    await recordOf(ids.nope);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
      await page.goto(`${gw.url}/dashboard`);
      await page.locator('#login').waitFor({ state: 'visible' });
      await page.fill('#token', ADMIN_TOKEN);
      await page.click('#login-form button[type=submit]');
      await page.waitForSelector('body[data-loaded="true"]');
      assert.equal(await page.textContent('[data-testid=total-cache-share]'), '88.9 %');
      assert.equal(await page.textContent('[data-testid=total-cache-saved]'), '$0.019425');
      const cacheLine = (chart: string, name: string) =>
        page.locator(`[data-testid=${chart}] .bar-row[data-name="${name}"] [data-testid=cache]`);
      assert.equal(await cacheLine('chart-models', 'claude').textContent(), 'cache 99.9 % · saved $0.024300');
      // Writes never read: caching cost more than it saved, shown as such.
      assert.equal(await cacheLine('chart-models', 'claude-writes').textContent(), 'cache 0.0 % · saved −$0.006750');
      assert.equal(await cacheLine('chart-callers', `key:${keyId}`).textContent(), 'cache 74.9 % · saved $0.017550');
      // A group that neither read nor wrote a cache has no cache line.
      assert.equal(await page.locator('[data-testid=chart-models] .bar-row[data-name="nope"]').count(), 1);
      assert.equal(await cacheLine('chart-models', 'nope').count(), 0);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-cache.png'), fullPage: true });
    } finally {
      await browser.close();
    }
  });
});
