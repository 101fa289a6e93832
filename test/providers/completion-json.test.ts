import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { completionJson, type ChatCompletion } from '../../src/providers/completion-json.js';

const base: ChatCompletion = {
  id: 'msg_01',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'claude-sonnet-4-5',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, logprobs: null, finish_reason: 'stop' }],
};

describe('completionJson: the hand-written serialiser gives exactly what JSON.stringify gives', () => {
  const cases: Array<[string, ChatCompletion]> = [
    ['plain text', base],
    ['with usage', { ...base, usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } }],
    [
      'with cache reads and reasoning',
      {
        ...base,
        usage: {
          prompt_tokens: 12,
          completion_tokens: 5,
          total_tokens: 17,
          prompt_tokens_details: { cached_tokens: 8 },
          completion_tokens_details: { reasoning_tokens: 2 },
        },
      },
    ],
    [
      'with cache writes',
      {
        ...base,
        usage: {
          prompt_tokens: 12,
          completion_tokens: 5,
          total_tokens: 17,
          prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 10 },
        },
      },
    ],
    [
      'text that needs escaping',
      {
        ...base,
        id: 'a"b\\c',
        model: 'm\u2028',
        choices: [
          { ...base.choices[0]!, message: { role: 'assistant', content: 'line\n"quoted"\t\u0000 é 😀 \ud800' } },
        ],
      },
    ],
    [
      'null content with tool calls',
      {
        ...base,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
              ],
            },
            logprobs: null,
            finish_reason: 'tool_calls',
          },
        ],
      },
    ],
    [
      'several choices, a null finish reason',
      {
        ...base,
        choices: [
          { index: 0, message: { role: 'assistant', content: 'a' }, logprobs: null, finish_reason: null },
          { index: 1, message: { role: 'assistant', content: '' }, logprobs: null, finish_reason: 'length' },
        ],
      },
    ],
    ['no choices', { ...base, choices: [] }],
    [
      'non-finite numbers become null, as in JSON',
      { ...base, created: Number.NaN, usage: { prompt_tokens: Infinity, completion_tokens: 0, total_tokens: -0 } },
    ],
  ];
  for (const [name, completion] of cases) {
    test(name, () => {
      const text = completionJson(completion);
      assert.equal(text, JSON.stringify(completion));
      assert.doesNotThrow(() => JSON.parse(text));
    });
  }
});
