/**
 * A caller's reasoning effort reaching a provider that spells it its own way (issue 30): the chat body's
 * `reasoning_effort` (chat callers; the Responses API's `reasoning.effort`; the Messages API's `output_config.effort`
 * and `thinking`) as Anthropic's thinking settings and as Gemini's thinkingConfig.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { thinkingFor, type ThinkingTarget } from '../../src/providers/anthropic/thinking.js';
import { toAnthropicRequest } from '../../src/providers/anthropic/translate-request.js';
import { thinkingConfigFor } from '../../src/providers/gemini/thinking.js';
import { toGeminiRequest } from '../../src/providers/gemini/translate-request.js';
import { startGeminiUpstream, type GeminiUpstream } from '../helpers/upstreams/gemini.js';
import { CHAT_PATH, authHeaders, startGateway, type TestGateway, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';

const target = (model: string, extra: Partial<ThinkingTarget> = {}): ThinkingTarget => ({
  model,
  maxTokens: 32_000,
  defaultMaxTokens: 4096,
  unsignedToolTurn: false,
  ...extra,
});

describe('reasoning_effort as Anthropic thinking (pure)', () => {
  test('Claude 4.6 and later: adaptive thinking with the effort of the same name (minimal is low); none turns thinking off', () => {
    for (const model of ['claude-opus-4-6', 'claude-opus-4-8', 'claude-sonnet-5', 'claude-opus-5-5-20261101']) {
      assert.deepEqual(
        thinkingFor('high', target(model)),
        { thinking: { type: 'adaptive' }, output_config: { effort: 'high' } },
        model,
      );
    }
    assert.deepEqual(thinkingFor('minimal', target('claude-opus-4-8')), {
      thinking: { type: 'adaptive' },
      output_config: { effort: 'low' },
    });
    assert.deepEqual(thinkingFor('xhigh', target('claude-opus-4-8')), {
      thinking: { type: 'adaptive' },
      output_config: { effort: 'xhigh' },
    });
    assert.deepEqual(thinkingFor('none', target('claude-opus-4-8')), { thinking: { type: 'disabled' } });
  });

  test('earlier or unnamed models: enabled with a budget below max_tokens, or max_tokens grown by it when the caller set none', () => {
    for (const model of [
      'claude-sonnet-4-5-20250929',
      'claude-haiku-4-5',
      'claude-opus-4-20250514',
      'claude-3-7-sonnet-latest',
      'kimi-k2',
    ]) {
      assert.deepEqual(
        thinkingFor('medium', target(model)),
        { thinking: { type: 'enabled', budget_tokens: 8192 } },
        model,
      );
    }
    assert.deepEqual(thinkingFor('high', target('claude-sonnet-4-5', { maxTokens: 2000 })), {
      thinking: { type: 'enabled', budget_tokens: 1999 },
    });
    assert.equal(
      thinkingFor('high', target('claude-sonnet-4-5', { maxTokens: 1024 })),
      undefined,
      'no budget of 1,024 fits below 1,024',
    );
    assert.deepEqual(thinkingFor('low', target('claude-sonnet-4-5', { maxTokens: undefined })), {
      thinking: { type: 'enabled', budget_tokens: 2048 },
      max_tokens: 4096 + 2048,
    });
    assert.equal(thinkingFor('unheard-of', target('claude-sonnet-4-5')), undefined);
    assert.equal(thinkingFor(undefined, target('claude-sonnet-4-5')), undefined);
  });

  test('in the middle of a tool loop (the last assistant turn called tools, no thinking block): thinking off, the effort kept', () => {
    assert.deepEqual(thinkingFor('high', target('claude-opus-4-8', { unsignedToolTurn: true })), {
      thinking: { type: 'disabled' },
      output_config: { effort: 'high' },
    });
    assert.deepEqual(thinkingFor('high', target('claude-sonnet-4-5', { unsignedToolTurn: true })), {
      thinking: { type: 'disabled' },
    });
    const loop = toAnthropicRequest(
      {
        model: 'm',
        reasoning_effort: 'high',
        messages: [
          { role: 'user', content: 'list files' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 't1', type: 'function', function: { name: 'ls', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 't1', content: 'a.txt' },
        ],
      },
      'claude-opus-4-8',
    );
    assert.deepEqual([loop.thinking, loop.output_config], [{ type: 'disabled' }, { effort: 'high' }]);
  });

  test("toAnthropicRequest: the caller's own Anthropic `thinking` wins over reasoning_effort", () => {
    const own = toAnthropicRequest(
      {
        model: 'm',
        max_tokens: 9000,
        reasoning_effort: 'low',
        thinking: { type: 'enabled', budget_tokens: 4000 },
        messages: [{ role: 'user', content: 'x' }],
      },
      'claude-sonnet-4-5',
    );
    assert.deepEqual(own.thinking, { type: 'enabled', budget_tokens: 4000 });
    assert.equal(own.output_config, undefined);
  });
});

describe('reasoning_effort as Gemini thinkingConfig (pure)', () => {
  test('Gemini 3 and later: a thinkingLevel (Pro: never MINIMAL); 2.5: a thinkingBudget (Pro: at least 128); earlier or unnamed: none', () => {
    const cases: Array<[string, string, unknown]> = [
      ['gemini-3.1-pro-preview', 'medium', { thinkingLevel: 'MEDIUM' }],
      ['gemini-3.1-pro-preview', 'none', { thinkingLevel: 'LOW' }],
      ['gemini-3.8-flash', 'none', { thinkingLevel: 'MINIMAL' }],
      ['gemini-3.8-flash', 'xhigh', { thinkingLevel: 'HIGH' }],
      ['models/gemini-3-flash-preview', 'low', { thinkingLevel: 'LOW' }],
      ['gemini-2.5-flash', 'none', { thinkingBudget: 0 }],
      ['gemini-2.5-pro', 'none', { thinkingBudget: 128 }],
      ['gemini-2.5-flash-lite', 'high', { thinkingBudget: 16_384 }],
      ['gemini-2.0-flash', 'high', undefined],
      ['gemma-3-27b-it', 'high', undefined],
      ['gemini-3.1-pro-preview', 'unheard-of', undefined],
    ];
    for (const [model, effort, expected] of cases)
      assert.deepEqual(thinkingConfigFor(effort, model), expected, `${model} ${effort}`);
    const request = toGeminiRequest({
      model: 'gemini-2.5-flash',
      max_tokens: 100,
      reasoning_effort: 'medium',
      messages: [{ role: 'user', content: 'x' }],
    });
    assert.deepEqual(request.generationConfig, { maxOutputTokens: 100, thinkingConfig: { thinkingBudget: 8192 } });
  });

  test("Gemini 3: the first function call of each rebuilt model turn carries Google's stand-in signature (it refuses unsigned ones); 2.x none", () => {
    const calls = (model: string) => {
      const request = toGeminiRequest({
        model,
        messages: [
          { role: 'user', content: 'both' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } },
              { id: 'b', type: 'function', function: { name: 'g', arguments: '{}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'a', content: '1' },
          { role: 'tool', tool_call_id: 'b', content: '2' },
        ],
      }) as { contents: Array<{ parts: Array<Record<string, unknown>> }> };
      return (request.contents[1]?.parts ?? []).map((p) => p.thoughtSignature);
    };
    assert.deepEqual(calls('gemini-3.1-pro-preview'), ['skip_thought_signature_validator', undefined]);
    assert.deepEqual(calls('gemini-2.5-flash'), [undefined, undefined]);
  });
});

describe('reasoning_effort of a chat caller, to an Anthropic upstream (real sockets)', () => {
  const KEY = 'sk-ant-effort-0123456789';
  const fx = useGateway({
    upstream: 'anthropic',
    key: KEY,
    models: [
      '- { id: opus, upstream: claude, upstream_model: claude-opus-4-8 }',
      '- { id: sonnet, upstream: claude, upstream_model: claude-sonnet-4-5-20250929 }',
    ],
  });

  test('what Anthropic receives: adaptive + effort for Opus 4.8, a budget for Sonnet 4.5', async () => {
    const chat = (model: string) =>
      call(`${fx.gw.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: authHeaders(),
        body: JSON.stringify({
          model,
          max_tokens: 20_000,
          reasoning_effort: 'high',
          messages: [{ role: 'user', content: 'Hi' }],
        }),
      });
    assert.equal((await chat('opus')).status, 200);
    const opus = fx.mock.messageRequests().at(-1)?.body;
    assert.deepEqual(
      [opus?.thinking, opus?.output_config, opus?.max_tokens, 'reasoning_effort' in (opus ?? {})],
      [{ type: 'adaptive' }, { effort: 'high' }, 20_000, false],
    );
    assert.equal((await chat('sonnet')).status, 200);
    const sonnet = fx.mock.messageRequests().at(-1)?.body;
    assert.deepEqual(
      [sonnet?.thinking, sonnet?.output_config, sonnet?.max_tokens],
      [{ type: 'enabled', budget_tokens: 16_384 }, undefined, 20_000],
    );
  });
});

describe('reasoning_effort of a chat caller, to a Gemini upstream (real sockets)', () => {
  const KEY = 'gemini-effort-0123456789';
  let mock: GeminiUpstream;
  let gw: TestGateway;
  before(async () => {
    mock = await startGeminiUpstream({ requiredKey: KEY });
    gw = await startGateway({
      env: { GEMINI_EFFORT_KEY: KEY },
      configFile: {
        name: 'g.yaml',
        text: [
          'upstreams:',
          `  - { name: google, kind: gemini, base_url: "${mock.baseUrl}", api_key_env: GEMINI_EFFORT_KEY }`,
          'models:',
          '  - { id: g3, upstream: google, upstream_model: gemini-3.1-pro-preview }',
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });
  beforeEach(() => mock.reset());

  test('generationConfig.thinkingConfig carries the level', async () => {
    const answer = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'g3', reasoning_effort: 'low', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual((mock.generateRequests()[0]?.body as { generationConfig: unknown }).generationConfig, {
      thinkingConfig: { thinkingLevel: 'LOW' },
    });
  });
});
