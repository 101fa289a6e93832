/**
 * The built-in price catalog through the real gateway (issue 31): a model whose config gives no price is costed at
 * the catalog's list prices (declared or not, through Anthropic, OpenAI and OpenRouter), a config price overrides
 * it, a cost budget spends it; the models route says where each price and window came from; health names the
 * catalog's date; `gateway models --prices` prints the same from the config file alone; a catalog window truncates
 * only for a caller who asks, and never refuses a call.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { readStream } from '../../helpers/sse-client.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../../helpers/upstreams/anthropic.js';
import { answerWithParts, type PartsUsage } from '../../helpers/upstreams/raw-usage.js';
import { waitForValue } from '../../helpers/wait.js';
import { SqliteUsageStore } from '../../../src/store/sqlite/sqlite-usage.js';
import type { UsageRecord } from '../../../src/store/store-contract.js';
import { runCli } from '../../../src/cli/run-cli.js';

const KEY = 'sk-price-catalog-upstream-0123456789';
/** The agent step: 12 uncached input tokens, 9,000 cache reads, 3 out. */
const AGENT_STEP = '{"input_tokens":12,"cache_read_input_tokens":9000,"output_tokens":3}';
/** 2,000 input tokens of which 1,500 cached, 100 out. */
const CHAT_USAGE =
  '{"prompt_tokens":2000,"completion_tokens":100,"total_tokens":2100,"prompt_tokens_details":{"cached_tokens":1500}}';

describe('the price catalog prices what the config does not', () => {
  let oai: OpenAiUpstream;
  let claude: AnthropicUpstream;
  /** The usage objects the next answers carry. */
  let partsUsage: PartsUsage;
  let gw: TestGateway;
  let usage: SqliteUsageStore;
  let configText: string;
  before(async () => {
    partsUsage = { chat: CHAT_USAGE, responses: '{}', messages: AGENT_STEP, gemini: '{}' };
    [oai, claude] = await Promise.all([startOpenAiUpstream(), startAnthropicUpstream()]);
    answerWithParts({ openai: oai, anthropic: claude }, () => partsUsage);
    configText = [
      'limits: { upstream_pause_max_seconds: 0 }',
      'upstreams:',
      `  - { name: oai, kind: openai, base_url: "${oai.baseUrl}", api_key_env: CATALOG_KEY }`,
      `  - { name: claude, kind: anthropic, base_url: "${claude.baseUrl}", api_key_env: CATALOG_KEY }`,
      `  - { name: router, kind: openrouter, base_url: "${oai.baseUrl}", api_key_env: CATALOG_KEY }`,
      `  - { name: local, kind: vllm, base_url: "${oai.baseUrl}" }`,
      'models:',
      // No price, no window: both from the catalog (its dated snapshot name matched to claude-sonnet-4-5).
      '  - { id: sonnet, upstream: claude, upstream_model: claude-sonnet-4-5-20250929 }',
      // The config's prices replace the catalog's whole: no cache price here, so cache reads at its input price.
      '  - { id: sonnet-house, upstream: claude, upstream_model: claude-sonnet-4-5, context_window: 100000, pricing: { input_per_million: 1, output_per_million: 1 } }',
      // OpenRouter names the vendor: Anthropic's prices for its Claude.
      '  - { id: via-router, upstream: router, upstream_model: anthropic/claude-sonnet-4.5 }',
      // A local server's prices are not known: none.
      '  - { id: local-llama, upstream: local, upstream_model: meta-llama/Llama-3.3-70B-Instruct }',
      'default_upstream: oai',
    ].join('\n');
    gw = await startGateway({ env: { CATALOG_KEY: KEY }, configFile: { name: 'catalog.yaml', text: configText } });
    usage = new SqliteUsageStore(gw.store.db);
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
  const chat = (model: string, extra: Record<string, unknown> = {}) => ({
    model,
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 16,
    ...extra,
  });
  const send = (path: string, body: Record<string, unknown>, headers = authHeaders()) =>
    body.stream === true
      ? readStream(`${gw.url}${path}`, JSON.stringify(body), headers)
      : call(`${gw.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });

  test('cost recorded at the catalog price when the config has none, at the config price when it has one', async () => {
    const cases: Array<[string, string, Record<string, unknown>, number | null]> = [
      // 12 × $3 + 9,000 × $0.30 + 3 × $15 per million: as Anthropic bills it.
      ['declared, no price: Anthropic catalog price (Messages JSON)', '/v1/messages', chat('sonnet'), 0.002781],
      [
        'declared, no price: Anthropic catalog price (chat stream, translated)',
        '/v1/chat/completions',
        chat('sonnet', { stream: true, stream_options: { include_usage: true } }),
        0.002781,
      ],
      // 9,015 tokens at $1: the config's prices, the catalog's cache price not mixed in.
      ['declared with a price: the config price', '/v1/messages', chat('sonnet-house'), 0.009015],
      // 500 × $0.15 + 1,500 × $0.075 + 100 × $0.60 per million (gpt-4o-mini), by the default upstream's kind.
      [
        'undeclared, dated name, default upstream of kind openai',
        '/v1/chat/completions',
        chat('gpt-4o-mini-2024-07-18'),
        0.0002475,
      ],
      // 500 × $3 + 1,500 × $0.30 + 100 × $15 per million (Claude Sonnet 4.5 through OpenRouter).
      ['OpenRouter: the vendor prefix names the family', '/v1/chat/completions', chat('via-router'), 0.00345],
      ['undeclared, a name the catalog does not know', '/v1/chat/completions', chat('house-llm'), null],
      ['a local server: no catalog price', '/v1/chat/completions', chat('local-llama'), null],
    ];
    const sent: Array<[string, unknown, number | null]> = [];
    for (const [name, path, body, cost] of cases) {
      const answer = await send(path, body);
      assert.equal(answer.status, 200, `${name}: ${answer.text.slice(0, 300)}`);
      sent.push([name, answer.headers['x-request-id'], cost]);
    }
    for (const [name, id, cost] of sent) assert.equal((await recordOf(id)).costUsd, cost, name);
  });

  test('a cost budget is spent at the catalog price', async () => {
    const created = await call(`${gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: authHeaders(),
      disclosesKey: true,
      body: JSON.stringify({
        name: 'catalog-priced',
        models: ['sonnet'],
        routes: ['messages'],
        budget: { cost_usd: 1, period_seconds: 86_400 },
      }),
    });
    const { id, key } = created.json as unknown as { id: string; key: string };
    for (let i = 0; i < 2; i++)
      assert.equal(
        (await send('/v1/messages', chat('sonnet'), authHeaders({ authorization: `Bearer ${key}` }))).status,
        200,
      );
    const report = await waitForValue(
      'both calls in the key usage',
      async () =>
        (await call(`${gw.url}/v1/?route=keys&id=${id}&action=usage`, { headers: authHeaders() })).json as Record<
          string,
          unknown
        > & { budget: Record<string, number> },
      (r) => r.requests === 2,
      5_000,
    );
    assert.deepEqual([report.cost_usd, report.budget.cost_left_usd], [0.005562, 0.994438]);
  });

  test('the models route: each price and window with where it came from, and the catalog date', async () => {
    const health = (await call(`${gw.url}/v1/?route=health`, { headers: authHeaders() })).json as {
      price_catalog?: { as_of: string; age_days: number; models: number };
    };
    const asOf = health.price_catalog?.as_of;
    assert.match(String(asOf), /^\d{4}-\d{2}-\d{2}$/);
    assert.equal(health.price_catalog?.age_days, Math.floor((Date.now() - Date.parse(String(asOf))) / 86_400_000));
    assert.ok((health.price_catalog?.models ?? 0) >= 60);
    const listed = (await call(`${gw.url}/v1/?route=models`, { headers: authHeaders() })).json.data as Array<
      Record<string, unknown>
    >;
    const byId = (id: string) => listed.find((m) => m.id === id) ?? {};
    const shown = (id: string) => [byId(id).context_window, byId(id).context_window_source, byId(id).pricing];
    assert.deepEqual(shown('sonnet'), [
      200_000,
      'catalog',
      {
        input_per_million_tokens: 3,
        output_per_million_tokens: 15,
        cache_read_per_million_tokens: 0.3,
        cache_write_per_million_tokens: 3.75,
        cache_write_1h_per_million_tokens: 6,
        currency: 'USD',
        source: 'catalog',
        as_of: asOf,
        catalog_entry: 'anthropic/claude-sonnet-4-5',
      },
    ]);
    assert.deepEqual(shown('sonnet-house'), [
      100_000,
      'config',
      { input_per_million_tokens: 1, output_per_million_tokens: 1, currency: 'USD', source: 'config' },
    ]);
    assert.equal(
      (byId('via-router').pricing as { catalog_entry?: string }).catalog_entry,
      'anthropic/claude-sonnet-4-5',
    );
    assert.deepEqual(shown('local-llama'), [null, undefined, undefined]);
    // The drop-in path shows the same.
    const dropIn = (await call(`${gw.url}/v1/models/sonnet`, { headers: authHeaders() })).json as {
      pricing?: { source?: string };
    };
    assert.equal(dropIn.pricing?.source, 'catalog');
  });

  test('gateway models --prices: the same, from the config file alone', async () => {
    const run = async (argv: string[]) => {
      const out: string[] = [];
      const err: string[] = [];
      const env = {
        GATEWAY_ENV: 'dev',
        DATA_DIR: gw.dataDir,
        GATEWAY_CONFIG: join(gw.dataDir, 'catalog.yaml'),
        CATALOG_KEY: KEY,
      };
      const code = await runCli(argv, env, { out: (l) => out.push(l), err: (l) => err.push(l) }, async () => '');
      return { code, out, err: err.join('\n') };
    };
    const json = await run(['models', '--prices', '--format', 'json', 'gpt-4o-2024-05-13', 'house-llm']);
    assert.equal(json.code, 0, json.err);
    const parsed = JSON.parse(json.out.join('')) as {
      models: Array<Record<string, unknown>>;
      price_catalog: { as_of: string; models: number };
      undeclared: string;
    };
    const row = (model: string) => parsed.models.find((m) => m.model === model);
    assert.deepEqual(row('sonnet'), {
      model: 'sonnet',
      upstream: 'claude',
      upstream_model: 'claude-sonnet-4-5-20250929',
      input: 3,
      output: 15,
      cache_read: 0.3,
      cache_write: 3.75,
      cache_write_1h: 6,
      price_source: 'catalog',
      catalog_entry: 'anthropic/claude-sonnet-4-5',
      context_window: 200_000,
      window_source: 'catalog',
    });
    assert.deepEqual(
      [
        row('sonnet-house')?.input,
        row('sonnet-house')?.cache_read,
        row('sonnet-house')?.price_source,
        row('sonnet-house')?.window_source,
      ],
      [1, null, 'config', 'config'],
    );
    // A name given on the command line, routed as the gateway would: the default upstream (openai), its exact entry.
    assert.deepEqual(
      [row('gpt-4o-2024-05-13')?.upstream, row('gpt-4o-2024-05-13')?.input, row('gpt-4o-2024-05-13')?.catalog_entry],
      ['oai', 5, 'openai/gpt-4o-2024-05-13'],
    );
    assert.deepEqual([row('house-llm')?.price_source, row('local-llama')?.price_source], ['none', 'none']);
    assert.equal(parsed.price_catalog.as_of, gw.config.priceCatalog?.asOf);
    assert.match(parsed.undeclared, /sent to oai \(openai\).*catalog's openai family/);
    const table = await run(['models', '--prices']);
    assert.equal(table.code, 0, table.err);
    assert.match(
      table.out[0] ?? '',
      /^model\s+upstream\s+upstream_model\s+input\s+output\s+cache_read\s+cache_write\s+cache_write_1h\s+price_source\s+context_window\s+window_source\s+catalog_entry$/,
    );
    assert.match(
      table.out.find((l) => l.startsWith('sonnet ')) ?? '',
      /^sonnet\s+claude\s+claude-sonnet-4-5-20250929\s+3\s+15\s+0\.3\s+3\.75\s+6\s+catalog\s+200000\s+catalog\s+anthropic\/claude-sonnet-4-5$/,
    );
    assert.ok(
      table.out.some((l) => l.startsWith(`price catalog: `) && l.includes(`as of ${gw.config.priceCatalog?.asOf}`)),
      table.out.join('\n'),
    );
    const bad = await run(['models', '--format', 'yaml']);
    assert.deepEqual([bad.code, bad.err], [2, '--format: table or json']);
  });
});

describe("a catalog of one's own (price_catalog: path) and catalog context windows", () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  before(async () => {
    mock = await startOpenAiUpstream();
    mock.models = [{ id: 'gpt-4o', owned_by: 'openai' }, { id: 'tiny' }];
    const dir = mkdtempSync(join(tmpdir(), 'gw-own-catalog-'));
    const file = join(dir, 'own-prices.json');
    writeFileSync(
      file,
      JSON.stringify({
        as_of: '2025-06-30',
        families: {
          openai: {
            source: 'https://example.com/prices',
            models: {
              'gpt-4o': { input_per_million: 7, output_per_million: 21 },
              tiny: { input_per_million: 1, output_per_million: 1, context_window: 60 },
            },
          },
        },
      }),
    );
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl, UPSTREAM_KIND: 'openai', UPSTREAM_API_KEY: 'sk-own-catalog-0123456789' },
      configFile: { name: 'gateway.yaml', text: `price_catalog: ${JSON.stringify(file)}\n` },
    });
  });
  after(async () => {
    await gw?.close();
    await mock?.close();
  });

  test("health and the models route name that catalog; the default upstream's listed models carry its prices", async () => {
    const health = (await call(`${gw.url}/v1/?route=health`, { headers: authHeaders() })).json as {
      price_catalog?: { as_of: string; models: number };
    };
    assert.deepEqual([health.price_catalog?.as_of, health.price_catalog?.models], ['2025-06-30', 2]);
    const listed = (await call(`${gw.url}/v1/?route=models`, { headers: authHeaders() })).json.data as Array<
      Record<string, unknown>
    >;
    const gpt = listed.find((m) => m.id === 'gpt-4o');
    assert.deepEqual(
      [gpt?.source, gpt?.context_window, gpt?.pricing],
      [
        'upstream',
        null,
        {
          input_per_million_tokens: 7,
          output_per_million_tokens: 21,
          currency: 'USD',
          source: 'catalog',
          as_of: '2025-06-30',
          catalog_entry: 'openai/gpt-4o',
        },
      ],
    );
    assert.deepEqual(
      [listed.find((m) => m.id === 'tiny')?.context_window, listed.find((m) => m.id === 'tiny')?.context_window_source],
      [60, 'catalog'],
    );
  });

  /** Three turns of about 62 estimated tokens against a catalog window of 60 (16 of them for max_tokens). */
  const long = {
    model: 'tiny',
    max_tokens: 16,
    messages: [
      { role: 'user', content: 'a'.repeat(80) },
      { role: 'assistant', content: 'b'.repeat(80) },
      { role: 'user', content: 'c'.repeat(40) },
    ],
  };
  const sentUpstream = () =>
    (mock.chatRequests().at(-1)?.json as { messages?: Array<{ content: string }> } | undefined)?.messages?.map(
      (m) => m.content[0],
    );

  test('a catalog window: no check without X-Context-Overflow; truncation with it; never a refusal', async () => {
    const plain = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify(long),
    });
    assert.equal(plain.status, 200, plain.text);
    assert.deepEqual(sentUpstream(), ['a', 'b', 'c'], 'forwarded as it came: the provider judges its own window');
    const fitted = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders({ 'x-context-overflow': 'truncate' }),
      body: JSON.stringify(long),
    });
    assert.equal(fitted.status, 200, fitted.text);
    assert.deepEqual(sentUpstream(), ['c'], 'the oldest turn dropped to fit the catalog window');
    // Even the last turn alone is too long: forwarded as it came, not refused (a declared window would be a 400).
    const tooLong = { ...long, messages: [{ role: 'user', content: 'd'.repeat(400) }] };
    const unfit = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders({ 'x-context-overflow': 'truncate' }),
      body: JSON.stringify(tooLong),
    });
    assert.equal(unfit.status, 200, unfit.text);
    assert.deepEqual(sentUpstream(), ['d']);
  });
});
