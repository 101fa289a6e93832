// The AI SDK's default multi-step tool loop (`openai(model)`: the Responses API with `store: true`) on every upstream
// kind. Its second step sends the model's earlier text back as an `item_reference` to the stored response's item
// (the model wrote text before its tool call, as Claude usually does): the gateway resolves it from the caller's own
// stored responses on a translated path, and forwards it as it is to an upstream that speaks the Responses API.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { ADMIN_TOKEN, authHeaders } from '../helpers/gateway.js';
import { closeThreeUpstreams, startThreeUpstreams, type ThreeUpstreams } from '../helpers/gemini-api-gateway.js';
import { call } from '../helpers/http.js';
import { scopedKey } from '../helpers/scoped-key.js';

const PREAMBLE = 'Let me check the weather.';
const FINAL = 'It is 21 degrees in Paris.';

const weather = tool({
  description: 'Weather in a city',
  inputSchema: jsonSchema<{ location: string }>({
    type: 'object',
    properties: { location: { type: 'string' } },
    required: ['location'],
    additionalProperties: false,
  }),
  execute: async ({ location }) => ({ location, temp: 21 }),
});

/** The first turn of each wire: text, then a call of `weather`; the second: the final text. */
const CHAT_TURNS = [
  {
    id: 'c1',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: PREAMBLE,
          tool_calls: [
            { id: 'call_chat_1', type: 'function', function: { name: 'weather', arguments: '{"location":"Paris"}' } },
          ],
        },
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  },
  {
    id: 'c2',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: FINAL }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 },
  },
];
const ANTHROPIC_TURNS = [
  {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-haiku-4-5',
    content: [
      { type: 'text', text: PREAMBLE },
      { type: 'tool_use', id: 'toolu_01', name: 'weather', input: { location: 'Paris' } },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5 },
  },
  {
    id: 'msg_2',
    type: 'message',
    role: 'assistant',
    model: 'claude-haiku-4-5',
    content: [{ type: 'text', text: FINAL }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 20, output_tokens: 5 },
  },
];
const GEMINI_TURNS = [
  {
    candidates: [
      {
        content: {
          role: 'model',
          parts: [{ text: PREAMBLE }, { functionCall: { name: 'weather', args: { location: 'Paris' } } }],
        },
        finishReason: 'STOP',
        index: 0,
      },
    ],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: 'gemini-2.0-flash',
  },
  {
    candidates: [{ content: { role: 'model', parts: [{ text: FINAL }] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 5, totalTokenCount: 25 },
    modelVersion: 'gemini-2.0-flash',
  },
];
const nativeTurn = (id: string, output: unknown[]) => ({
  id,
  object: 'response',
  created_at: 1,
  status: 'completed',
  model: 'gpt-5',
  output,
  usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15 },
});
const NATIVE_TURNS = [
  nativeTurn('resp_up_1', [
    {
      type: 'message',
      id: 'msg_up_1',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: PREAMBLE, annotations: [] }],
    },
    {
      type: 'function_call',
      id: 'fc_up_1',
      call_id: 'call_up_1',
      name: 'weather',
      arguments: '{"location":"Paris"}',
      status: 'completed',
    },
  ]),
  nativeTurn('resp_up_2', [
    {
      type: 'message',
      id: 'msg_up_2',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: FINAL, annotations: [] }],
    },
  ]),
];

describe("the AI SDK's default tool loop (Responses API, store: true) on every upstream kind", () => {
  let fx: ThreeUpstreams;
  before(async () => {
    fx = await startThreeUpstreams(
      // The same mock server as OpenAI itself (`kind: openai`): it speaks the Responses API, so requests go as they are.
      ['  - { id: gpt-native, upstream: oai-native, upstream_model: gpt-5 }'],
      {},
      ['  - { name: oai-native, kind: openai, base_url: "{openai}", api_key_env: OPENAI_KEY }'],
    );
  });
  after(() => closeThreeUpstreams(fx));
  const sdk = (key = ADMIN_TOKEN) => createOpenAI({ baseURL: `${fx.gw.url}/v1`, apiKey: key });

  async function loop(model: string) {
    const result = await generateText({
      model: sdk()(model),
      prompt: 'Weather in Paris?',
      tools: { weather },
      stopWhen: stepCountIs(3),
    });
    assert.equal(result.text, FINAL);
    assert.equal(result.steps.length, 2);
    assert.equal(result.steps[0]?.text, PREAMBLE);
    return result;
  }

  test('chat-translated (OpenAI-compatible): the referenced text goes upstream as the assistant turn', async () => {
    for (const body of CHAT_TURNS) fx.openai.enqueue({ kind: 'json', body });
    await loop('gpt-4o-mini');
    const second = fx.openai.chatRequests().at(-1)?.json as { messages: Array<Record<string, unknown>> };
    const assistant = second.messages.find((m) => m.role === 'assistant');
    assert.equal(assistant?.content, PREAMBLE, 'the item_reference was resolved to the stored text');
    assert.equal((assistant?.tool_calls as Array<{ id: string }>)[0]?.id, 'call_chat_1');
    assert.equal(second.messages.find((m) => m.role === 'tool')?.tool_call_id, 'call_chat_1');
  });

  test('Anthropic-translated: the referenced text and the tool_use are one assistant turn', async () => {
    for (const body of ANTHROPIC_TURNS) fx.anthropic.enqueue({ kind: 'json', body });
    await loop('claude-fast');
    const second = fx.anthropic.messageRequests().at(-1)?.body as unknown as {
      messages: Array<{ role: string; content: Array<Record<string, unknown>> }>;
    };
    const assistant = second.messages.find((m) => m.role === 'assistant');
    assert.deepEqual(
      assistant?.content.map((block) => block.type),
      ['text', 'tool_use'],
    );
    assert.equal(assistant?.content[0]?.text, PREAMBLE);
  });

  test('Gemini-translated: the referenced text goes up as the model turn', async () => {
    for (const body of GEMINI_TURNS) fx.gemini.enqueue({ kind: 'json', body });
    await loop('flash');
    const second = fx.gemini.requests.at(-1)?.body as unknown as {
      contents: Array<{ role: string; parts: Array<Record<string, unknown>> }>;
    };
    const model = second.contents.find((c) => c.role === 'model');
    assert.equal(model?.parts[0]?.text, PREAMBLE);
    assert.ok(model?.parts.some((part) => part.functionCall !== undefined));
  });

  test('native (kind: openai): the item_reference goes to the upstream as it is, its id owned by this caller', async () => {
    for (const body of NATIVE_TURNS) fx.openai.enqueue({ kind: 'responses-json', body });
    const chatCalls = fx.openai.chatRequests().length;
    await loop('gpt-native');
    const sent = fx.openai.requests.filter((r) => r.path === '/v1/responses');
    const input = (sent.at(-1)?.json as { input: Array<Record<string, unknown>> }).input;
    assert.ok(
      input.some((item) => item.type === 'item_reference' && item.id === 'msg_up_1'),
      JSON.stringify(input),
    );
    assert.equal(fx.openai.chatRequests().length, chatCalls, 'never translated');
  });

  test("another caller's item, or an unknown one, is a 404 naming the field; nothing goes upstream", async () => {
    for (const body of CHAT_TURNS) fx.openai.enqueue({ kind: 'json', body });
    const first = await sdk()
      .responses('gpt-4o-mini')
      .doGenerate({
        prompt: [{ role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] }],
      });
    const itemId = (first.content.find((part) => part.type === 'text')?.providerMetadata?.openai as { itemId: string })
      .itemId;
    assert.match(itemId, /^msg_[0-9a-f]{36}$/);
    const otherKey = await scopedKey(fx.gw.store, ['responses']);
    const before = fx.openai.chatRequests().length;
    const refer = (key: string, id: string) =>
      call(`${fx.gw.url}/v1/responses`, {
        method: 'POST',
        headers: { ...authHeaders(), authorization: `Bearer ${key}` },
        body: JSON.stringify({
          model: 'gpt-4o-mini',
          input: [
            { role: 'user', content: 'Weather in Paris?' },
            { type: 'item_reference', id },
          ],
        }),
      });
    for (const [key, id] of [
      [otherKey, itemId],
      [ADMIN_TOKEN, `msg_${'0'.repeat(36)}`],
      [ADMIN_TOKEN, 'msg_not_one_of_ours'],
    ] as const) {
      const answer = await refer(key, id);
      assert.equal(answer.status, 404, answer.text);
      const body = answer.json as { code: string; details: { id: string; field: string } };
      assert.equal(body.code, 'response_not_found');
      assert.deepEqual(body.details, { id, field: 'input[1].id' });
    }
    assert.equal(fx.openai.chatRequests().length, before);
    const mine = await refer(ADMIN_TOKEN, itemId);
    assert.equal(mine.status, 200, 'its owner may refer to it');
  });
});
