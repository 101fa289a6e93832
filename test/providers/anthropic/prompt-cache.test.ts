/**
 * Prompt caching survives translation (issue 31): a chat request translated for Anthropic gets cache_control
 * breakpoints (the last tool, the system prompt, the last turn and the user turn before it; never more than four;
 * none where the caller marked its own; none with `prompt_cache: off`), measured through the real gateway against
 * an upstream that caches prompts as Anthropic does; `prompt_cache_key` reaches an OpenAI upstream.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { toAnthropicRequest } from '../../../src/providers/anthropic/translate-request.js';
import type { ChatMessage, ChatRequestBody } from '../../../src/providers/provider-contract.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../../src/config/load.js';
import { SqliteUsageStore } from '../../../src/store/sqlite/sqlite-usage.js';
import type { UsageRecord } from '../../../src/store/store-contract.js';
import { authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { dataFrames, readStream } from '../../helpers/sse-client.js';
import { waitForValue } from '../../helpers/wait.js';
import { startAnthropicUpstream, type AnthropicUpstream, type CacheUsage } from '../../helpers/upstreams/anthropic.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';

const MARK = { type: 'ephemeral' };
const KEY = 'sk-prompt-cache-upstream-0123456789';

const fn = (name: string, description: string) => ({
  type: 'function',
  function: {
    name,
    description,
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
});
const TOOLS = [
  fn('read_file', 'Reads a file of the repository.'),
  fn('run_tests', 'Runs the test suite and reports failures.'),
  fn('write_file', 'Writes a file of the repository.'),
];

describe('prompt-cache breakpoints of a chat request translated for Anthropic (pure)', () => {
  const conversation: ChatMessage[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Fix the failing test.' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'run_tests', arguments: '{"path":"."}' } }],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '1 failing: parse.test.ts' },
    {
      role: 'assistant',
      content: 'Reading it.',
      tool_calls: [
        { id: 'call_2', type: 'function', function: { name: 'read_file', arguments: '{"path":"parse.ts"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_2', content: 'export function parse() {}' },
  ];
  const body: ChatRequestBody = { model: 'claude', messages: conversation, tools: TOOLS };

  test('auto: the last tool, the system prompt, the last block of the last turn and of the user turn before it; four at most', () => {
    const out = toAnthropicRequest(body, 'claude-sonnet-4-5', 4096, 'auto');
    assert.deepEqual(out.system, [{ type: 'text', text: 'You are a coding agent.', cache_control: MARK }]);
    assert.deepEqual(
      (out.tools as Array<{ name: string; cache_control?: unknown }>).map((t) => [t.name, t.cache_control]),
      [
        ['read_file', undefined],
        ['run_tests', undefined],
        ['write_file', MARK],
      ],
    );
    assert.deepEqual(out.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Fix the failing test.' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'run_tests', input: { path: '.' } }] },
      // The point the previous call wrote (read by this one even past Anthropic's 20-block lookback).
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: '1 failing: parse.test.ts', cache_control: MARK },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Reading it.' },
          { type: 'tool_use', id: 'call_2', name: 'read_file', input: { path: 'parse.ts' } },
        ],
      },
      // The whole conversation, written for the next call.
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_2', content: 'export function parse() {}', cache_control: MARK },
        ],
      },
    ]);
    assert.equal(JSON.stringify(out).split('"cache_control"').length - 1, 4);
    // A first turn: no earlier user turn, no tools, no system: one breakpoint.
    const first = toAnthropicRequest(
      { model: 'm', messages: [{ role: 'user', content: 'Hi' }] },
      'claude-sonnet-4-5',
      4096,
      'auto',
    );
    assert.deepEqual(
      [first.system, first.messages],
      [undefined, [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: MARK }] }]],
    );
  });

  test("off, or the caller's own breakpoints: the gateway marks none, and the caller's are kept where it put them", () => {
    const off = toAnthropicRequest(body, 'claude-sonnet-4-5', 4096, 'off');
    assert.equal(JSON.stringify(off).includes('cache_control'), false);
    assert.equal(off.system, 'You are a coding agent.');
    // The OpenAI-shaped marks SDKs and routers send: on a content part, on a tool, on a system part, on a tool result's part.
    const own = toAnthropicRequest(
      {
        model: 'claude',
        tools: [{ ...TOOLS[0], cache_control: { type: 'ephemeral', ttl: '1h' } }, TOOLS[1]],
        messages: [
          {
            role: 'system',
            content: [
              { type: 'text', text: 'Rules.', cache_control: MARK },
              { type: 'text', text: 'Today is Monday.' },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'A long document', cache_control: MARK },
              { type: 'text', text: 'Summarise it.' },
            ],
          },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'read_file', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'c', content: [{ type: 'text', text: 'contents', cache_control: MARK }] },
        ],
      },
      'claude-sonnet-4-5',
      4096,
      'auto',
    );
    assert.deepEqual(
      (own.tools as Array<{ cache_control?: unknown }>).map((t) => t.cache_control),
      [{ type: 'ephemeral', ttl: '1h' }, undefined],
    );
    assert.deepEqual(own.system, [
      { type: 'text', text: 'Rules.', cache_control: MARK },
      { type: 'text', text: 'Today is Monday.' },
    ]);
    assert.deepEqual(own.messages, [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'A long document', cache_control: MARK },
          { type: 'text', text: 'Summarise it.' },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'c', name: 'read_file', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c', content: 'contents', cache_control: MARK }] },
    ]);
  });

  test("a thinking block or a blank text is never marked; the caller's parts are copied, never changed (the body may go to another target)", () => {
    const thinking = { type: 'thinking', thinking: 'hmm', signature: 'sig' };
    const image = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } };
    const messages: ChatMessage[] = [
      { role: 'user', content: [image] },
      { role: 'assistant', content: [{ type: 'text', text: 'Sure.' }, thinking] },
    ];
    const out = toAnthropicRequest({ model: 'm', messages }, 'claude-sonnet-4-5', 4096, 'auto');
    assert.deepEqual(out.messages, [
      { role: 'user', content: [{ ...image, cache_control: MARK }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Sure.', cache_control: MARK }, thinking] },
    ]);
    assert.deepEqual(
      image,
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } },
      "the caller's part unchanged",
    );
    const blank = toAnthropicRequest(
      {
        model: 'm',
        messages: [
          { role: 'system', content: '  ' },
          { role: 'assistant', content: '' },
        ],
      },
      'claude-sonnet-4-5',
      4096,
      'auto',
    );
    assert.deepEqual(
      [blank.system, blank.messages],
      ['  ', [{ role: 'assistant', content: [{ type: 'text', text: ' ' }] }]],
    );
  });

  test('the model option: prompt_cache is auto unless set; only auto and off are taken', () => {
    const models = (extra: string) => {
      const dir = mkdtempSync(join(tmpdir(), 'gw-prompt-cache-'));
      const lines = [
        'upstreams: [{ name: a, kind: anthropic, base_url: "http://127.0.0.1:9/v1" }]',
        'models:',
        `  - { id: c, upstream: a${extra} }`,
      ];
      writeFileSync(join(dir, 'c.yaml'), lines.join('\n'));
      return loadConfig({ GATEWAY_CONFIG: join(dir, 'c.yaml') }).models.map((m) => m.promptCache);
    };
    assert.deepEqual(
      [models(''), models(', prompt_cache: off'), models(', prompt_cache: auto')],
      [['auto'], ['off'], ['auto']],
    );
    assert.throws(
      () => models(', prompt_cache: always'),
      (error: unknown) => error instanceof ConfigError && error.problems.some((p) => p.includes('prompt_cache')),
    );
  });
});

/** About 2,300 tokens of instructions: above the 1,024-token minimum, as an agent's system prompt is. */
const SYSTEM_PROMPT = Array.from(
  { length: 120 },
  (_, i) => `Rule ${i + 1}: keep every change small, tested and explained in the commit message.`,
).join('\n');
/** A tool's output the agent sends back: about 300 tokens. */
const toolOutput = (step: number) => `step ${step}: ` + 'ok '.repeat(400);

interface Turn {
  requestId: string;
  usage: CacheUsage;
}

describe('an agent loop through the chat surface to Anthropic: what the breakpoints save, measured', () => {
  let up: AnthropicUpstream;
  let oai: OpenAiUpstream;
  let gw: TestGateway;
  let usage: SqliteUsageStore;
  before(async () => {
    up = await startAnthropicUpstream({ promptCache: true });
    oai = await startOpenAiUpstream();
    const pricing =
      'pricing: { input_per_million: 3, output_per_million: 15, cache_read_per_million: 0.3, cache_write_per_million: 3.75 }';
    gw = await startGateway({
      env: { CACHE_KEY: KEY },
      configFile: {
        name: 'prompt-cache.yaml',
        text: [
          'upstreams:',
          `  - { name: claude, kind: anthropic, base_url: "${up.baseUrl}", api_key_env: CACHE_KEY }`,
          `  - { name: oai, kind: openai, base_url: "${oai.baseUrl}", api_key_env: CACHE_KEY }`,
          'models:',
          `  - { id: claude, upstream: claude, upstream_model: claude-sonnet-4-5, ${pricing} }`,
          `  - { id: claude-nocache, upstream: claude, upstream_model: claude-sonnet-4-5, prompt_cache: off, ${pricing} }`,
          '  - { id: gpt-5, upstream: oai }',
          '  - { id: gpt, upstream: oai, upstream_model: gpt-5 }',
        ].join('\n'),
      },
    });
    usage = new SqliteUsageStore(gw.store.db);
  });
  after(async () => {
    await gw?.close();
    await up?.close();
    await oai?.close();
  });

  const recordOf = async (requestId: string): Promise<UsageRecord> =>
    (await waitForValue(
      `the usage record of ${requestId}`,
      async () => (await usage.recent(1_000, false)).find((r) => r.requestId === requestId),
      (r) => r !== undefined,
      5_000,
    )) as UsageRecord;

  /** Runs the agent: each tool call answered with its output, until the model answers in text; turn 3 streamed. */
  async function agentLoop(model: string): Promise<Turn[]> {
    const messages: Array<Record<string, unknown>> = [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: 'The build is red. Find out why and fix it.' },
    ];
    const turns: Turn[] = [];
    for (let turn = 1; turn <= 10; turn++) {
      const before = up.promptCache.usages.length;
      const body = { model, messages, tools: TOOLS, max_tokens: 1024 };
      let message: {
        content: string | null;
        tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
      };
      let requestId: string;
      if (turn === 3) {
        const answer = await readStream(
          `${gw.url}/v1/chat/completions`,
          JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
          authHeaders(),
        );
        assert.equal(answer.status, 200, answer.text.slice(0, 400));
        requestId = String(answer.headers['x-request-id']);
        message = assembled(answer.text);
      } else {
        const answer = await call(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: authHeaders(),
          body: JSON.stringify(body),
        });
        assert.equal(answer.status, 200, answer.text.slice(0, 400));
        requestId = String(answer.headers['x-request-id']);
        message = (answer.json.choices as Array<{ message: typeof message }>)[0]?.message as typeof message;
      }
      assert.equal(up.promptCache.usages.length, before + 1, 'one upstream call per turn');
      turns.push({ requestId, usage: up.promptCache.usages.at(-1) as CacheUsage });
      if (!message.tool_calls) break;
      messages.push({ role: 'assistant', content: message.content, tool_calls: message.tool_calls });
      for (const toolCall of message.tool_calls)
        messages.push({ role: 'tool', tool_call_id: toolCall.id, content: toolOutput(turn) });
    }
    return turns;
  }

  test('5 turns with tools and a long system prompt: 4 breakpoints sent, each turn reads what the last wrote; the same loop uncached costs more', async (t) => {
    up.promptCache.clear();
    const cachedStart = up.requests.length;
    const cached = await agentLoop('claude');
    const cachedRequests = up.requests.slice(cachedStart);
    up.promptCache.clear();
    const plainStart = up.requests.length;
    const plain = await agentLoop('claude-nocache');
    const plainRequests = up.requests.slice(plainStart);
    assert.deepEqual([cached.length, plain.length], [5, 5]);

    // What the upstream received: exactly these breakpoints, in the body's bytes.
    const marks = (text: string) => text.split('"cache_control":{"type":"ephemeral"}').length - 1;
    assert.deepEqual(
      cachedRequests.map((r) => marks(r.text)),
      [3, 4, 4, 4, 4],
      'turn 1 has no earlier user turn',
    );
    assert.deepEqual(
      cachedRequests.map((r) => r.text.split('cache_control').length - 1),
      [3, 4, 4, 4, 4],
      'no other mark',
    );
    assert.deepEqual(
      plainRequests.map((r) => r.text.includes('cache_control')),
      [false, false, false, false, false],
      'prompt_cache: off sends none',
    );
    const last = cachedRequests[4]?.body as {
      tools: Array<Record<string, unknown>>;
      system: unknown;
      messages: Array<{ role: string; content: Array<Record<string, unknown>> }>;
    };
    assert.deepEqual(
      last.tools.map((tool) => tool.cache_control),
      [undefined, undefined, MARK],
    );
    assert.deepEqual(last.system, [{ type: 'text', text: SYSTEM_PROMPT, cache_control: MARK }]);
    const marked = last.messages.flatMap((m, i) =>
      m.content.flatMap((b, j) => (b.cache_control ? [[i, j, m.role, b.type, b.tool_use_id]] : [])),
    );
    assert.deepEqual(marked, [
      [6, 0, 'user', 'tool_result', 'toolu_step2_0'],
      [8, 0, 'user', 'tool_result', 'toolu_step3_0'],
    ]);

    // The same prompts, split differently: every turn's prompt is the same size either way.
    const prompt = (u: CacheUsage) => u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
    assert.deepEqual(
      cached.map((turn) => prompt(turn.usage)),
      plain.map((turn) => prompt(turn.usage)),
    );
    // Cached: turn 1 writes its whole prompt; each later turn reads all the previous one sent and writes only what it added.
    cached.forEach((turn, i) => {
      const previous = cached[i - 1];
      assert.equal(
        turn.usage.cache_read_input_tokens,
        previous ? prompt(previous.usage) : 0,
        `turn ${i + 1} reads the previous prompt`,
      );
      assert.equal(
        turn.usage.cache_creation_input_tokens,
        prompt(turn.usage) - turn.usage.cache_read_input_tokens,
        `turn ${i + 1} writes the rest`,
      );
      assert.equal(turn.usage.input_tokens, 0, 'nothing after the last breakpoint');
    });
    assert.ok(
      plain.every((turn) => turn.usage.cache_read_input_tokens === 0 && turn.usage.cache_creation_input_tokens === 0),
    );

    // The usage records: the parts and the cost as Anthropic bills them.
    const records = async (turns: Turn[]) => Promise.all(turns.map(async (turn) => recordOf(turn.requestId)));
    const [withCache, without] = [await records(cached), await records(plain)];
    const row = (r: UsageRecord) => [
      r.promptTokens,
      r.cacheReadTokens ?? 0,
      r.cacheWriteTokens ?? 0,
      r.completionTokens,
      r.costUsd,
    ];
    assert.deepEqual(withCache.map(row), [
      [2521, 0, 2521, 60, 0.01035375],
      [2862, 2521, 341, 60, 0.00293505],
      [3203, 2862, 341, 60, 0.00303735],
      [3544, 3203, 341, 60, 0.00313965],
      [3885, 3544, 341, 25, 0.00271695],
    ]);
    assert.deepEqual(without.map(row), [
      [2521, 0, 0, 60, 0.008463],
      [2862, 0, 0, 60, 0.009486],
      [3203, 0, 0, 60, 0.010509],
      [3544, 0, 0, 60, 0.011532],
      [3885, 0, 0, 25, 0.01203],
    ]);
    const total = (rows: UsageRecord[]) => Math.round(rows.reduce((sum, r) => sum + (r.costUsd ?? 0), 0) * 1e6) / 1e6;
    const [costCached, costPlain] = [total(withCache), total(without)];
    assert.deepEqual([costCached, costPlain], [0.022183, 0.05202]);
    const saving = Math.round((1 - costCached / costPlain) * 1000) / 10;
    assert.equal(saving, 57.4);
    t.diagnostic(`5 turns: $${costCached} with breakpoints, $${costPlain} without: ${saving}% cheaper`);
  });

  test('turns that add more than 20 blocks each (12 parallel tool calls and their results) still read the previous turn: the breakpoint on the user turn before the last', async () => {
    up.promptCache.clear();
    up.promptCache.toolTurns = 2;
    up.promptCache.callsPerTurn = 12;
    try {
      const start = up.requests.length;
      const turns = (await agentLoop('claude')).map((turn) => turn.usage);
      const sent = up.requests[start + 2]?.body as { messages: Array<{ role: string; content: unknown[] }> };
      assert.deepEqual(
        sent.messages.map((m) => [m.role, m.content.length]),
        [
          ['user', 1],
          ['assistant', 12],
          ['user', 12],
          ['assistant', 12],
          ['user', 12],
        ],
      );
      // Each turn reads the previous call's whole prompt. Anthropic's lookback from the last block (20 blocks) would not
      // reach it: without that breakpoint the third turn reads 2,504 tokens (tools and system) and writes 8,215.
      const prompt = (u: CacheUsage) => u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
      assert.deepEqual(
        turns.map((u) => [u.cache_read_input_tokens, u.cache_creation_input_tokens, u.input_tokens]),
        turns.map((u, i) => [
          i === 0 ? 0 : prompt(turns[i - 1] as CacheUsage),
          prompt(u) - (i === 0 ? 0 : prompt(turns[i - 1] as CacheUsage)),
          0,
        ]),
      );
      assert.equal(turns.length, 3);
    } finally {
      up.promptCache.toolTurns = 4;
      up.promptCache.callsPerTurn = 1;
    }
  });

  test('prompt_cache_key and prompt_cache_retention reach an OpenAI upstream as they are; an Anthropic upstream gets neither (it has no such field)', async () => {
    const body = JSON.stringify({
      model: 'gpt-5',
      messages: [{ role: 'user', content: 'Hi' }],
      prompt_cache_key: 'agent-7f3a',
      prompt_cache_retention: '24h',
    });
    oai.reset();
    const same = await call(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: authHeaders(), body });
    assert.equal(same.status, 200, same.text);
    assert.equal(oai.chatRequests()[0]?.body, body, 'the caller bytes, forwarded as they are');
    // Renamed for the upstream (the body is written again): the fields are still there.
    const renamed = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(),
      body: body.replace('"gpt-5"', '"gpt"'),
    });
    assert.equal(renamed.status, 200, renamed.text);
    const sent = oai.chatRequests()[1]?.json as Record<string, unknown>;
    assert.deepEqual([sent.model, sent.prompt_cache_key, sent.prompt_cache_retention], ['gpt-5', 'agent-7f3a', '24h']);

    const start = up.requests.length;
    const anthropic = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(),
      body: body.replace('"gpt-5"', '"claude"'),
    });
    assert.equal(anthropic.status, 200, anthropic.text);
    const toClaude = up.requests[start]?.body as Record<string, unknown>;
    assert.deepEqual([toClaude.prompt_cache_key, toClaude.prompt_cache_retention], [undefined, undefined]);
    assert.equal(
      anthropic.headers['x-gateway-dropped-fields'],
      undefined,
      'the chat surface leaves out what a provider has no field for, as it always has',
    );
  });
});

/** A streamed chat answer's message: its text and its tool calls, assembled from the chunks. */
function assembled(text: string): {
  content: string | null;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
} {
  let content: string | null = null;
  const calls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> = [];
  for (const frame of dataFrames(text)) {
    if (frame === '[DONE]') continue;
    const chunk = JSON.parse(frame) as {
      choices: Array<{
        delta: {
          content?: string | null;
          tool_calls?: Array<{ index: number; id?: string; function?: { name?: string; arguments?: string } }>;
        };
      }>;
    };
    const delta = chunk.choices[0]?.delta;
    if (typeof delta?.content === 'string') content = (content ?? '') + delta.content;
    for (const piece of delta?.tool_calls ?? []) {
      const entry = (calls[piece.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (piece.id) entry.id = piece.id;
      entry.function.name += piece.function?.name ?? '';
      entry.function.arguments += piece.function?.arguments ?? '';
    }
  }
  return calls.length > 0 ? { content, tool_calls: calls } : { content };
}
