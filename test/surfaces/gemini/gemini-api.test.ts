/**
 * Google's Gemini API mounted on the real gateway (surfaces/gemini/descriptor.ts), called by Google's own SDK
 * (@google/genai 3.1.0, pinned) with `httpOptions.baseUrl` set to the gateway, once with `apiVersion: 'v1beta'` (the
 * version Gemini CLI's SDK calls) and once with the SDK's default, `v1`. Behind the gateway, real node:http mocks: a
 * Gemini upstream (the request forwarded as the caller wrote it: thought signatures, safety settings and tools
 * untouched), a chat-completions upstream and an Anthropic upstream (the request translated: what each received is
 * asserted). Generate, stream, a tool round trip, countTokens, embeddings, the paged models list and one model.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GoogleGenAI, type Content } from '@google/genai';
import { mockGeminiCount } from '../../helpers/upstreams/gemini.js';
import { MOCK_CONTENT, MOCK_TOOL_ARGUMENTS, mockVector } from '../../helpers/upstreams/openai.js';
import { ADMIN_TOKEN } from '../../helpers/gateway.js';
import {
  GEMINI_KEY,
  OPENAI_KEY,
  closeThreeUpstreams,
  startThreeUpstreams,
  type ThreeUpstreams,
} from '../../helpers/gemini-api-gateway.js';
import { call } from '../../helpers/http.js';

const WEATHER_TOOLS = [
  {
    functionDeclarations: [
      {
        name: 'get_weather',
        description: 'Weather of a city',
        parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ],
  },
];
const SAFETY = [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }] as never;

async function collect(stream: AsyncGenerator<{ text?: string | undefined }>): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += chunk.text ?? '';
  return text;
}

for (const apiVersion of ['v1beta', undefined] as const) {
  const version = apiVersion ?? 'v1';
  describe(`@google/genai 3.1.0 through the gateway's Gemini API (${version}${apiVersion ? '' : ', the SDK default'})`, () => {
    let fx: ThreeUpstreams;
    let ai: GoogleGenAI;
    before(async () => {
      fx = await startThreeUpstreams();
      ai = new GoogleGenAI({
        apiKey: ADMIN_TOKEN,
        httpOptions: { baseUrl: fx.gw.url, ...(apiVersion ? { apiVersion } : {}) },
      });
    });
    after(() => closeThreeUpstreams(fx));
    beforeEach(() => {
      fx.gemini.reset();
      fx.openai.reset();
      fx.anthropic.reset();
    });

    describe('to a Gemini upstream: forwarded as the caller wrote it', () => {
      test('generateContent: the body reaches Gemini as sent (safety settings, thinking, system instruction), the answer comes back as Gemini wrote it', async () => {
        const answer = await ai.models.generateContent({
          model: 'flash',
          contents: 'Weather in Paris?',
          config: {
            systemInstruction: 'Be brief.',
            safetySettings: SAFETY,
            temperature: 0.2,
            thinkingConfig: { thinkingBudget: 1024, includeThoughts: true },
          },
        });
        assert.equal(answer.text, 'Hello from Gemini');
        assert.deepEqual(answer.usageMetadata, { promptTokenCount: 8, candidatesTokenCount: 6, totalTokenCount: 14 });
        assert.equal(answer.modelVersion, 'gemini-2.0-flash');
        const [sent] = fx.gemini.generateRequests();
        assert.equal(sent?.url, '/v1beta/models/gemini-2.0-flash:generateContent');
        assert.equal(sent?.headers['x-goog-api-key'], GEMINI_KEY, "the upstream's key, never the caller's");
        assert.deepEqual(sent?.body, {
          contents: [{ parts: [{ text: 'Weather in Paris?' }], role: 'user' }],
          systemInstruction: { parts: [{ text: 'Be brief.' }], role: 'user' },
          safetySettings: SAFETY,
          generationConfig: { temperature: 0.2, thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } },
        });
        assert.equal(fx.openai.requests.length + fx.anthropic.requests.length, 0);
      });

      test('generateContentStream: Gemini events passed on, alt=sse upstream, the last empty part and its signature kept', async () => {
        const event = (parts: unknown[], finish?: string) =>
          JSON.stringify({
            candidates: [{ content: { role: 'model', parts }, ...(finish ? { finishReason: finish } : {}), index: 0 }],
            usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 2, totalTokenCount: 7 },
            modelVersion: 'gemini-2.0-flash',
          });
        fx.gemini.enqueue({
          kind: 'raw-stream',
          data: [
            event([{ text: 'Bon' }]),
            event([{ text: 'jour' }]),
            event([{ text: '', thoughtSignature: 'c2ln' }], 'STOP'),
          ],
        });
        const chunks = [];
        for await (const chunk of await ai.models.generateContentStream({ model: 'flash', contents: 'Hi' }))
          chunks.push(chunk);
        assert.equal(chunks.map((c) => c.text ?? '').join(''), 'Bonjour');
        assert.equal(chunks.at(-1)?.candidates?.[0]?.content?.parts?.[0]?.thoughtSignature, 'c2ln');
        assert.equal(chunks.at(-1)?.candidates?.[0]?.finishReason, 'STOP');
        assert.equal(
          fx.gemini.generateRequests()[0]?.url,
          '/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse',
        );
      });

      test('a tool round trip: the functionCall and its thoughtSignature back to the caller, then the history with them and the functionResponse forwarded untouched', async () => {
        const signedCall = {
          functionCall: { name: 'get_weather', args: { city: 'Paris' } },
          thoughtSignature: 'c2lnbmVkLWNhbGw=',
        };
        fx.gemini.enqueue(
          {
            kind: 'json',
            body: {
              candidates: [{ content: { role: 'model', parts: [signedCall] }, finishReason: 'STOP', index: 0 }],
              usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 3, totalTokenCount: 12 },
              modelVersion: 'gemini-2.0-flash',
            },
          },
          { kind: 'answer', text: 'Sunny in Paris.' },
        );
        const first = await ai.models.generateContent({
          model: 'flash',
          contents: 'Weather in Paris?',
          config: { tools: WEATHER_TOOLS },
        });
        assert.deepEqual(first.functionCalls, [{ name: 'get_weather', args: { city: 'Paris' } }]);
        const modelTurn = first.candidates?.[0]?.content as Content;
        assert.deepEqual(modelTurn.parts, [signedCall]);
        const history: Content[] = [
          { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
          modelTurn,
          { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: 'sunny' } } }] },
        ];
        const second = await ai.models.generateContent({
          model: 'flash',
          contents: history,
          config: { tools: WEATHER_TOOLS },
        });
        assert.equal(second.text, 'Sunny in Paris.');
        const sent = fx.gemini.generateRequests()[1]?.body as { contents: unknown; tools: unknown };
        assert.deepEqual(sent.contents, history);
        assert.deepEqual(sent.tools, WEATHER_TOOLS);
      });

      test("countTokens: Gemini's own count of the caller's contents", async () => {
        const counted = await ai.models.countTokens({ model: 'flash', contents: 'How many tokens is this?' });
        const sent = fx.gemini.requests.at(-1);
        assert.equal(sent?.url, '/v1beta/models/gemini-2.0-flash:countTokens');
        assert.deepEqual(sent?.body, { contents: [{ parts: [{ text: 'How many tokens is this?' }], role: 'user' }] });
        assert.equal(counted.totalTokens, mockGeminiCount(sent?.text ?? ''));
      });

      test("embedContent (the SDK's batchEmbedContents): Gemini's vectors in input order", async () => {
        const embedded = await ai.models.embedContent({
          model: 'gemini-embed',
          contents: ['alpha', 'beta'],
          config: { outputDimensionality: 2 },
        });
        assert.deepEqual(
          embedded.embeddings?.map((e) => e.values),
          [
            [0.5, 0.25],
            [1, 0.75],
          ],
        );
        const sent = fx.gemini.requests.at(-1);
        assert.equal(sent?.url, '/v1beta/models/text-embedding-004:batchEmbedContents');
        assert.deepEqual((sent?.body as { requests: unknown[] }).requests, [
          { model: 'models/text-embedding-004', content: { parts: [{ text: 'alpha' }] }, outputDimensionality: 2 },
          { model: 'models/text-embedding-004', content: { parts: [{ text: 'beta' }] }, outputDimensionality: 2 },
        ]);
      });
    });

    describe('to a chat-completions upstream: translated', () => {
      test('generateContent: the chat request the upstream received, the answer as a GenerateContentResponse', async () => {
        const answer = await ai.models.generateContent({
          model: 'gpt-4o-mini',
          contents: 'Weather in Paris?',
          config: { systemInstruction: 'Be brief.', temperature: 0.2, maxOutputTokens: 64, stopSequences: ['END'] },
        });
        assert.equal(answer.text, MOCK_CONTENT);
        assert.equal(answer.candidates?.[0]?.finishReason, 'STOP');
        assert.ok((answer.usageMetadata?.promptTokenCount ?? 0) > 0);
        const [sent] = fx.openai.chatRequests();
        assert.deepEqual(sent?.json, {
          model: 'gpt-4o-mini',
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'Weather in Paris?' },
          ],
          temperature: 0.2,
          max_tokens: 64,
          stop: ['END'],
        });
        assert.equal(sent?.headers.authorization, `Bearer ${OPENAI_KEY}`);
      });

      test('generateContentStream: the chat stream as Gemini events', async () => {
        fx.openai.enqueue({ kind: 'stream' });
        const text = await collect(
          await ai.models.generateContentStream({ model: 'gpt-4o-mini', contents: 'Hi', config: { temperature: 1 } }),
        );
        assert.equal(text, MOCK_CONTENT);
        const sent = fx.openai.chatRequests()[0]?.json as Record<string, unknown>;
        assert.equal(sent.stream, true);
        assert.deepEqual(sent.messages, [{ role: 'user', content: 'Hi' }]);
      });

      test('a tool round trip: the chat tool call as a functionCall with its id, the functionResponse as its tool result', async () => {
        const first = await ai.models.generateContent({
          model: 'gpt-4o-mini',
          contents: 'Weather in Paris?',
          config: { tools: WEATHER_TOOLS },
        });
        assert.deepEqual(first.functionCalls, [
          { id: 'call_1', name: 'get_weather', args: JSON.parse(MOCK_TOOL_ARGUMENTS) as object },
        ]);
        const tools = (fx.openai.chatRequests()[0]?.json as { tools: unknown }).tools;
        assert.deepEqual(tools, [
          {
            type: 'function',
            function: {
              name: 'get_weather',
              description: 'Weather of a city',
              parameters: WEATHER_TOOLS[0]?.functionDeclarations[0]?.parametersJsonSchema,
            },
          },
        ]);
        const history: Content[] = [
          { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
          first.candidates?.[0]?.content as Content,
          {
            role: 'user',
            parts: [{ functionResponse: { id: 'call_1', name: 'get_weather', response: { output: 'sunny' } } }],
          },
        ];
        const second = await ai.models.generateContent({
          model: 'gpt-4o-mini',
          contents: history,
          config: { tools: WEATHER_TOOLS },
        });
        assert.equal(second.text, MOCK_CONTENT);
        assert.deepEqual((fx.openai.chatRequests()[1]?.json as { messages: unknown[] }).messages.slice(1), [
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: MOCK_TOOL_ARGUMENTS } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: '{"output":"sunny"}' },
        ]);
      });

      test("countTokens: the gateway's own count, no upstream call", async () => {
        const counted = await ai.models.countTokens({ model: 'gpt-4o-mini', contents: 'How many tokens is this?' });
        assert.ok((counted.totalTokens ?? 0) > 0 && (counted.totalTokens ?? 0) < 100, String(counted.totalTokens));
        assert.equal(fx.openai.requests.length, 0);
      });

      test('embedContent: an OpenAI embeddings call, its vectors in input order', async () => {
        const embedded = await ai.models.embedContent({ model: 'embed-small', contents: ['one', 'two', 'three'] });
        assert.deepEqual(
          embedded.embeddings?.map((e) => e.values),
          [0, 1, 2].map((i) => mockVector(i, 4)),
        );
        const sent = fx.openai.requests.at(-1);
        assert.equal(sent?.path, '/v1/embeddings');
        assert.deepEqual((sent?.json as { input: unknown }).input, ['one', 'two', 'three']);
      });
    });

    describe('to an Anthropic upstream: translated', () => {
      test('generateContent and generateContentStream: the Messages request Anthropic received', async () => {
        const answer = await ai.models.generateContent({
          model: 'claude-fast',
          contents: 'Hi',
          config: { systemInstruction: 'Be brief.', maxOutputTokens: 100 },
        });
        assert.equal(answer.text, 'Hello from Claude');
        const sent = fx.anthropic.messageRequests()[0]?.body as Record<string, unknown>;
        assert.equal(sent.model, 'claude-haiku-4-5');
        assert.equal(sent.max_tokens, 100);
        assert.deepEqual(sent.system, [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }]);
        assert.deepEqual(sent.messages, [
          { role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] },
        ]);
        const text = await collect(await ai.models.generateContentStream({ model: 'claude-fast', contents: 'Hi' }));
        assert.equal(text, 'Hello from Claude');
        assert.equal((fx.anthropic.messageRequests()[1]?.body as { stream?: unknown }).stream, true);
      });
    });

    test('models.list (paged by pageSize and pageToken) and models.get, in Gemini shape', async () => {
      const names: string[] = [];
      for await (const model of await ai.models.list({ config: { pageSize: 2 } })) names.push(model.name ?? '');
      // Every model the caller may call (the admin: all of them, the built-in `echo` too), in the catalog's order.
      assert.deepEqual(names, [
        'models/claude-fast',
        'models/echo',
        'models/embed-small',
        'models/flash',
        'models/gemini-2.0-flash',
        'models/gemini-embed',
        'models/gpt-4o-mini',
      ]);
      const model = await ai.models.get({ model: 'flash' });
      assert.equal(model.name, 'models/flash');
      assert.deepEqual(model.supportedActions, ['generateContent', 'streamGenerateContent', 'countTokens']);
      const embedder = await ai.models.get({ model: 'gemini-embed' });
      assert.deepEqual(embedder.supportedActions, ['embedContent', 'batchEmbedContents']);
    });
  });
}

describe('the bytes of a request forwarded to Gemini', () => {
  let fx: ThreeUpstreams;
  before(async () => {
    fx = await startThreeUpstreams();
  });
  after(() => closeThreeUpstreams(fx));

  test("are the caller's, byte for byte, for a model Gemini knows by the same name: its spacing, escapes, key order, fields the gateway does not know; under another name, the same JSON", async () => {
    const body =
      '{ "generationConfig" : {"temperature":0.7,"futureKnob":{"x":1}},\n' +
      '  "contents":[{"role":"user","parts":[{"text":"Hi \\u00e9"}]}],\n' +
      '  "safetySettings":[{"category":"HARM_CATEGORY_HATE_SPEECH","threshold":"BLOCK_NONE"}],\n' +
      '  "tools":[{"googleSearch":{}}], "labels":{"team":"a"} }';
    const send = (model: string) =>
      call(`${fx.gw.url}/v1beta/models/${model}:generateContent`, {
        method: 'POST',
        headers: { 'x-goog-api-key': ADMIN_TOKEN, 'content-type': 'application/json' },
        body,
      });
    const same = await send('gemini-2.0-flash');
    assert.equal(same.status, 200, same.text);
    assert.equal(fx.gemini.generateRequests()[0]?.text, body);
    // The model is in Gemini's URL, not its body: renamed by the route, the body is sent again as the same JSON.
    const renamed = await send('flash');
    assert.equal(renamed.status, 200, renamed.text);
    const sent = fx.gemini.generateRequests()[1];
    assert.equal(sent?.url, '/v1beta/models/gemini-2.0-flash:generateContent');
    assert.equal(sent?.text, JSON.stringify(JSON.parse(body)));
  });

  test("countTokens of a whole generateContentRequest: Gemini counts it, for the target's model", async () => {
    const contents = [{ role: 'user', parts: [{ text: 'Count me' }] }];
    const systemInstruction = { parts: [{ text: 'Be brief.' }] };
    const counted = await call(`${fx.gw.url}/v1/models/flash:countTokens`, {
      method: 'POST',
      headers: { 'x-goog-api-key': ADMIN_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ generateContentRequest: { model: 'models/flash', contents, systemInstruction } }),
    });
    assert.equal(counted.status, 200, counted.text);
    const sent = fx.gemini.requests.at(-1);
    assert.equal(sent?.url, '/v1beta/models/gemini-2.0-flash:countTokens');
    assert.deepEqual(sent?.body, {
      generateContentRequest: { model: 'models/gemini-2.0-flash', contents, systemInstruction },
    });
    assert.deepEqual(counted.json, { totalTokens: mockGeminiCount(sent?.text ?? '') });
  });
});
