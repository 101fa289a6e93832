import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { GatewayError } from '../../../src/errors/gateway-error.js';
import { assertValid, boundedValidatorCompiler } from '../../../src/http/bounded-validation.js';
import type { ChatRequestBody } from '../../../src/providers/provider-contract.js';
import { toGeminiRequest } from '../../../src/providers/gemini/translate-request.js';
import { chatBodySchema } from '../../../src/surfaces/chat-schema.js';
import { checkConversation } from '../../../src/routes/chat-rules.js';
import { geminiCallOf } from '../../../src/surfaces/gemini/gemini-surface.js';
import { geminiToChat } from '../../../src/surfaces/gemini/request-to-chat.js';
import { TranslationNotes } from '../../../src/surfaces/translation-notes.js';
import type { GeminiGenerateRequest } from '../../../src/wire/gemini.js';
import { effortOfThinking, jsonSchemaOf } from '../../../src/wire/gemini-values.js';

const WEATHER = {
  name: 'get_weather',
  description: 'Weather of a city',
  parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const user = (text: string) => ({ role: 'user' as const, parts: [{ text }] });

/**
 * Conversations in the forms both APIs express, each taken through the gateway's two translations: Gemini -> chat
 * (the ingress) -> Gemini (the Gemini provider). Nothing may be lost or changed. (The provider sends no call ids, so
 * these conversations have none: the ids are the next describe's.)
 */
const ROUND_TRIPS: Array<{ name: string; model?: string; request: GeminiGenerateRequest }> = [
  {
    name: 'text turns, system instruction and every sampling field',
    request: {
      contents: [user('Hi'), { role: 'model', parts: [{ text: 'Hello!' }] }, user('Bye')],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: {
        temperature: 0.3,
        topP: 0.9,
        maxOutputTokens: 100,
        stopSequences: ['END'],
        candidateCount: 2,
        seed: 7,
        presencePenalty: 0.1,
        frequencyPenalty: 0.2,
      },
    },
  },
  {
    name: 'images beside text: inlineData (a data URL) and fileData (its URI)',
    request: {
      contents: [
        {
          role: 'user',
          parts: [
            { text: 'What is this?' },
            { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
            { fileData: { fileUri: 'https://example.com/cat.jpg' } },
          ],
        },
      ],
    },
  },
  {
    name: 'a tool round trip: text and two calls, their results and more text',
    request: {
      contents: [
        user('Weather in Paris and Rome?'),
        {
          role: 'model',
          parts: [
            { text: 'Let me check.' },
            { functionCall: { name: 'get_weather', args: { city: 'Paris' } } },
            { functionCall: { name: 'get_weather', args: { city: 'Rome' } } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'get_weather', response: { output: 'sunny' } } },
            { functionResponse: { name: 'get_weather', response: { output: 'rain' } } },
            { text: 'Thanks' },
          ],
        },
      ],
      tools: [{ functionDeclarations: [WEATHER] }],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
    },
  },
  ...(['AUTO', 'ANY', 'NONE'] as const).map((mode) => ({
    name: `function calling mode ${mode}`,
    request: {
      contents: [user('q')],
      tools: [{ functionDeclarations: [WEATHER] }],
      toolConfig: { functionCallingConfig: { mode } },
    },
  })),
  { name: 'Google Search grounding', request: { contents: [user('News?')], tools: [{ googleSearch: {} }] } },
  {
    name: 'JSON output',
    request: { contents: [user('q')], generationConfig: { responseMimeType: 'application/json' } },
  },
  {
    name: 'JSON output with a schema',
    request: {
      contents: [user('q')],
      generationConfig: {
        responseMimeType: 'application/json',
        responseSchema: { type: 'object' as never, properties: { a: { type: 'integer' as never } } },
      },
    },
  },
  {
    name: 'a thinking level (Gemini 3)',
    model: 'gemini-3.1-flash',
    request: { contents: [user('q')], generationConfig: { thinkingConfig: { thinkingLevel: 'LOW' } } },
  },
  {
    name: 'a thinking budget (Gemini 2.5)',
    model: 'gemini-2.5-flash',
    request: { contents: [user('q')], generationConfig: { thinkingConfig: { thinkingBudget: 1024 } } },
  },
];

const validateChat = boundedValidatorCompiler()({
  schema: chatBodySchema,
  method: 'POST',
  url: '/v1/chat/completions',
  httpPart: 'body',
});

/** A translated request is one the chat route itself would take: its schema, and its conversation rules. */
function assertValidChat(chat: ChatRequestBody): void {
  assertValid(validateChat, chat);
  checkConversation(chat);
}

describe('Gemini -> chat -> Gemini (pure functions)', () => {
  for (const { name, model = 'm', request } of ROUND_TRIPS) {
    test(`round trip loses nothing: ${name}`, () => {
      const chat = geminiToChat(request, model);
      assertValidChat(chat);
      assert.deepEqual(toGeminiRequest(chat), request);
    });
  }

  test('parameters in OpenAPI form (upper-case types) reach chat as JSON Schema, and the provider sends them as such', () => {
    const parameters = {
      type: 'OBJECT',
      properties: { city: { type: 'STRING' }, days: { type: 'INTEGER', nullable: true, minimum: 1 } },
      required: ['city'],
    };
    const chat = geminiToChat(
      { contents: [user('q')], tools: [{ functionDeclarations: [{ name: 'f', parameters: parameters as never }] }] },
      'm',
    );
    const expected = {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: ['integer', 'null'], minimum: 1 } },
      required: ['city'],
    };
    assert.deepEqual(chat.tools, [{ type: 'function', function: { name: 'f', parameters: expected } }]);
    assert.deepEqual(toGeminiRequest(chat).tools, [
      { functionDeclarations: [{ name: 'f', parametersJsonSchema: expected }] },
    ]);
  });
});

describe('Gemini CLI 0.61.0, as recorded (test/fixtures/clients/gemini-cli-0.61.0/conformance-tool-loop.json)', () => {
  const fixture = JSON.parse(
    readFileSync(
      new URL('../../fixtures/clients/gemini-cli-0.61.0/conformance-tool-loop.json', import.meta.url),
      'utf8',
    ),
  ) as {
    requests: Array<{ path: string; query: Record<string, string>; body: GeminiGenerateRequest }>;
  };
  const translated = fixture.requests.map(({ path, query, body }) => {
    const segment = path.slice(path.lastIndexOf('/') + 1);
    const call = geminiCallOf(segment, query.alt);
    assert.ok(call, path);
    const notes = new TranslationNotes('tolerant');
    return {
      call,
      chat: geminiToChat(body, call.model, { stream: call.stream !== undefined, notes }),
      dropped: notes.dropped,
    };
  });

  test("its three requests are valid chat requests; the model and the stream are the URL's", () => {
    assert.deepEqual(
      translated.map(({ call }) => call),
      [
        { model: 'gemini-3.5-flash-lite', action: 'generateContent' },
        { model: 'gemini-3.8-flash', action: 'streamGenerateContent', stream: 'sse' },
        { model: 'gemini-3.8-flash', action: 'streamGenerateContent', stream: 'sse' },
      ],
    );
    for (const { chat, call } of translated) {
      assertValidChat(chat);
      assert.equal(chat.model, call.model);
      assert.equal(chat.stream, call.stream === undefined ? undefined : true);
      assert.equal(chat.messages[0]?.role, 'system');
      assert.equal(chat.temperature, 1);
      assert.equal(chat.top_p, 0.95);
      assert.equal(chat.reasoning_effort, 'high', 'thinkingLevel HIGH');
    }
    // topK has no chat field, and no thoughts come back from a chat upstream: both named, nothing else.
    assert.deepEqual(
      translated.map(({ dropped }) => dropped),
      Array(3).fill(['generationConfig.topK', 'generationConfig.thinkingConfig.includeThoughts']),
    );
  });

  test("the router call's upper-case responseJsonSchema is chat's json_schema in lower case", () => {
    assert.deepEqual(translated[0]?.chat.response_format, {
      type: 'json_schema',
      json_schema: {
        name: 'response',
        schema: {
          type: 'object',
          properties: {
            complexity_reasoning: { type: 'string', description: 'Brief explanation for the score.' },
            complexity_score: { type: 'integer', description: 'Complexity score from 1-100.' },
          },
          required: ['complexity_reasoning', 'complexity_score'],
        },
      },
    });
  });

  test('its tools are the 8 functions with their JSON Schema parameters as sent', () => {
    const tools = translated[1]?.chat.tools as Array<{ function: { name: string; parameters: unknown } }>;
    const declarations = fixture.requests[1]?.body.tools?.[0]?.functionDeclarations ?? [];
    assert.equal(tools.length, 8);
    assert.deepEqual(
      tools.map((t) => t.function.name),
      declarations.map((d) => d.name),
    );
    assert.deepEqual(
      tools.map((t) => t.function.parameters),
      declarations.map((d) => d.parametersJsonSchema),
    );
  });

  test("turn 2: the CLI's own call id is the tool call's id and the tool result's tool_call_id", () => {
    const history = fixture.requests[2]?.body.contents ?? [];
    const call = history.flatMap((c) => c.parts).find((p) => p.functionCall)?.functionCall;
    const response = history.flatMap((c) => c.parts).find((p) => p.functionResponse)?.functionResponse;
    assert.ok(call && response);
    assert.ok(call.id?.startsWith('read_file_') && response.id === call.id, 'the CLI sent its id in both parts');
    const messages = translated[2]?.chat.messages ?? [];
    const assistant = messages.find((m) => m.role === 'assistant');
    assert.deepEqual(assistant?.tool_calls, [
      { id: call.id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify(call.args) } },
    ]);
    assert.equal(assistant?.content, null, 'its thoughtSignature is left out');
    assert.deepEqual(messages.at(-1), {
      role: 'tool',
      tool_call_id: call.id,
      content: JSON.stringify(response.response),
    });
  });
});

describe('Gemini request fields on a translated path: mapped, dropped (named), refused (docs/gemini.md)', () => {
  const base: GeminiGenerateRequest = { contents: [user('Hi')] };
  const translate = (extra: Record<string, unknown>, mode: 'tolerant' | 'strict' = 'tolerant') => {
    const notes = new TranslationNotes(mode);
    return {
      chat: geminiToChat({ ...base, ...extra } as GeminiGenerateRequest, 'm', { notes }),
      dropped: notes.dropped ?? [],
    };
  };
  const refusal = (extra: Record<string, unknown>, mode: 'tolerant' | 'strict' = 'tolerant') => {
    try {
      translate(extra, mode);
    } catch (error) {
      return error as GatewayError & { details: { errors?: Array<{ field: string }> } };
    }
    return assert.fail('not refused');
  };

  test('calls without ids get ids from their name and place; results without ids answer the oldest open call of their name', () => {
    const { chat } = translate({
      contents: [
        user('q'),
        {
          role: 'model',
          parts: [
            { functionCall: { name: 'a', args: {} } },
            { functionCall: { name: 'b', args: { x: 1 } } },
            { functionCall: { name: 'a', args: { n: 2 } } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'a', response: { r: 1 } } },
            { functionResponse: { name: 'a', response: { r: 2 } } },
            { functionResponse: { name: 'b', response: {} } },
          ],
        },
      ],
    });
    assert.deepEqual(
      chat.messages[1]?.tool_calls?.map((call) => call.id),
      ['call_a_1_0', 'call_b_1_1', 'call_a_1_2'],
    );
    assert.deepEqual(
      chat.messages.slice(2).map((m) => [m.tool_call_id, m.content]),
      [
        ['call_a_1_0', '{"r":1}'],
        ['call_a_1_2', '{"r":2}'],
        ['call_b_1_1', '{}'],
      ],
    );
    // The same history sent again makes the same ids: what a chat upstream saw last turn, it sees again.
    assert.deepEqual(
      translate({ contents: [user('q'), { role: 'model', parts: [{ functionCall: { name: 'a', args: {} } }] }] }).chat
        .messages[1]?.tool_calls?.[0]?.id,
      'call_a_1_0',
    );
  });

  test('results by id in any order; a result by name then takes the oldest call not answered by id', () => {
    const calls = ['c1', 'c2', 'c3'].map((id) => ({ functionCall: { id, name: 'f', args: {} } }));
    const { chat } = translate({
      contents: [
        user('q'),
        { role: 'model', parts: calls },
        {
          role: 'user',
          parts: [
            { functionResponse: { id: 'c3', name: 'f', response: {} } },
            { functionResponse: { id: 'c1', name: 'f', response: {} } },
            { functionResponse: { name: 'f', response: {} } },
          ],
        },
      ],
    });
    assert.deepEqual(
      chat.messages.slice(2).map((m) => m.tool_call_id),
      ['c3', 'c1', 'c2'],
    );
  });

  test("a result that answers no call is the caller's 400 validation_failed", () => {
    const error = refusal({
      contents: [user('q'), { role: 'user', parts: [{ functionResponse: { name: 'ghost', id: 'x1', response: {} } }] }],
    });
    assert.equal(error.code, 'validation_failed');
    assert.deepEqual(
      error.details.errors?.map((e) => e.field),
      ['contents[1].parts[0].functionResponse'],
    );
  });

  test('generationConfig: each sampling field, JSON output, thinking by level and by budget', () => {
    const { chat } = translate({
      generationConfig: {
        temperature: 0.5,
        topP: 0.8,
        maxOutputTokens: 64,
        stopSequences: ['x'],
        candidateCount: 1,
        seed: 3,
        presencePenalty: 0.5,
        frequencyPenalty: -0.5,
        responseModalities: ['TEXT'],
      },
    });
    assert.deepEqual(chat, {
      model: 'm',
      messages: [{ role: 'user', content: 'Hi' }],
      temperature: 0.5,
      top_p: 0.8,
      max_tokens: 64,
      stop: ['x'],
      n: 1,
      seed: 3,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
    });
    assert.deepEqual(translate({ generationConfig: { responseMimeType: 'application/json' } }).chat.response_format, {
      type: 'json_object',
    });
    assert.equal(translate({ generationConfig: { responseMimeType: 'text/plain' } }).chat.response_format, undefined);
    const cases: Array<[Record<string, unknown>, string | undefined]> = [
      [{ thinkingLevel: 'MINIMAL' }, 'minimal'],
      [{ thinkingLevel: 'LOW' }, 'low'],
      [{ thinkingLevel: 'MEDIUM' }, 'medium'],
      [{ thinkingLevel: 'HIGH' }, 'high'],
      [{ thinkingBudget: 0 }, 'none'],
      [{ thinkingBudget: -1 }, undefined],
      [{ thinkingBudget: 300 }, 'minimal'],
      [{ thinkingBudget: 1024 }, 'low'],
      [{ thinkingBudget: 5000 }, 'medium'],
      [{ thinkingBudget: 16_384 }, 'high'],
      [{ thinkingBudget: 32_768 }, 'high'],
      [{ thinkingLevel: 'LOW', thinkingBudget: 0 }, 'low'],
    ];
    for (const [config, effort] of cases) {
      assert.equal(effortOfThinking(config), effort, JSON.stringify(config));
      assert.equal(
        translate({ generationConfig: { thinkingConfig: config } }).chat.reasoning_effort,
        effort,
        JSON.stringify(config),
      );
    }
  });

  test('toolConfig: several allowed functions are `required` (the narrowing named), VALIDATED is `auto` (named)', () => {
    const many = translate({
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['a', 'b'] } },
    });
    assert.deepEqual(
      [many.chat.tool_choice, many.dropped],
      ['required', ['toolConfig.functionCallingConfig.allowedFunctionNames']],
    );
    const validated = translate({ toolConfig: { functionCallingConfig: { mode: 'VALIDATED' } } });
    assert.deepEqual(
      [validated.chat.tool_choice, validated.dropped],
      ['auto', ['toolConfig.functionCallingConfig.mode']],
    );
  });

  test('hints are dropped and named; a strict model refuses the first one', () => {
    const { chat, dropped } = translate({
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }],
      cachedContent: 'cachedContents/abc',
      labels: { team: 'a' },
      generationConfig: { topK: 40, responseLogprobs: true, thinkingConfig: { includeThoughts: true } },
      tools: [{ functionDeclarations: [{ ...WEATHER, behavior: 'BLOCKING', response: { type: 'OBJECT' } }] }],
    });
    assert.deepEqual(dropped, [
      'safetySettings',
      'cachedContent',
      'labels',
      'generationConfig.topK',
      'generationConfig.responseLogprobs',
      'generationConfig.thinkingConfig.includeThoughts',
      'tools[0].functionDeclarations[0].behavior',
      'tools[0].functionDeclarations[0].response',
    ]);
    assert.equal(chat.top_k, undefined, 'not passed on: OpenAI refuses top_k');
    const strict = refusal({ safetySettings: [] }, 'strict');
    assert.deepEqual(
      [strict.code, strict.details],
      ['capability_not_supported', { field: 'safetySettings', problem: strict.details.problem }],
    );
  });

  test('what would change the answer and has no chat equivalent is refused, each named (400 capability_not_supported)', () => {
    const error = refusal({
      contents: [
        {
          role: 'user',
          parts: [
            { text: 'q' },
            { inlineData: { mimeType: 'audio/wav', data: 'AAAA' } },
            { executableCode: { code: 'print(1)' } },
          ],
        },
        { role: 'tool', parts: [{ text: 'x' }] },
      ],
      systemInstruction: { parts: [{ inlineData: { mimeType: 'image/png', data: 'AA' } }] },
      tools: [{ codeExecution: {} }, { urlContext: {} }],
      generationConfig: { responseMimeType: 'text/x.enum', responseModalities: ['IMAGE'], speechConfig: {} },
      continuationToken: 'x',
    });
    assert.equal(error.code, 'capability_not_supported');
    assert.deepEqual(error.details.errors?.map((e) => e.field).sort(), [
      'contents[0].parts[1].inlineData.mimeType',
      'contents[0].parts[2]',
      'contents[1].role',
      'continuationToken',
      'generationConfig.responseMimeType',
      'generationConfig.responseModalities',
      'generationConfig.speechConfig',
      'systemInstruction.parts[0]',
      'tools[0].codeExecution',
      'tools[1].urlContext',
    ]);
  });

  test('a body of the wrong types is a 400 validation_failed naming the field', () => {
    assert.throws(
      () => translate({ generationConfig: { temperature: 'hot' } }),
      (e: GatewayError) =>
        e.code === 'validation_failed' && JSON.stringify(e.details).includes('generationConfig.temperature'),
    );
    assert.throws(
      () => translate({ contents: [{ role: 'model', parts: [{ functionCall: { args: {} } }] }] }),
      (e: GatewayError) => e.code === 'validation_failed',
    );
  });
});

describe('OpenAPI Schema -> JSON Schema (jsonSchemaOf)', () => {
  test('types lower-cased at every depth, nullable as a "null" type, counts as numbers; data and property names untouched', () => {
    const schema = {
      type: 'OBJECT',
      propertyOrdering: ['type', 'tags'],
      properties: {
        type: { type: 'STRING', enum: ['OBJECT', 'STRING'], default: 'STRING' },
        tags: { type: 'ARRAY', minItems: '1', maxItems: '5', items: { type: 'STRING', nullable: true } },
        when: { anyOf: [{ type: 'INTEGER' }, { type: 'NULL' }] },
        any: { type: 'TYPE_UNSPECIFIED', description: 'x' },
      },
    };
    assert.deepEqual(jsonSchemaOf(schema), {
      type: 'object',
      propertyOrdering: ['type', 'tags'],
      properties: {
        type: { type: 'string', enum: ['OBJECT', 'STRING'], default: 'STRING' },
        tags: { type: 'array', minItems: 1, maxItems: 5, items: { type: ['string', 'null'] } },
        when: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
        any: { description: 'x' },
      },
    });
    const json = {
      type: 'object',
      properties: { a: { type: ['string', 'null'] } },
      additionalProperties: false,
      $defs: { b: { type: 'integer' } },
    };
    assert.deepEqual(jsonSchemaOf(json), json, 'JSON Schema comes out the same');
  });

  test('a schema nested past the bound is refused, not followed (a hostile body may nest thousands deep)', () => {
    let deep: Record<string, unknown> = { type: 'STRING' };
    for (let i = 0; i < 10_000; i++) deep = { type: 'ARRAY', items: deep };
    assert.equal(jsonSchemaOf(deep), undefined);
    let shallow: Record<string, unknown> = { type: 'STRING' };
    for (let i = 0; i < 63; i++) shallow = { type: 'ARRAY', items: shallow };
    assert.notEqual(jsonSchemaOf(shallow), undefined, '64 levels are followed');
    assert.equal(jsonSchemaOf({ type: 'ARRAY', items: shallow }), undefined, '65 are not');
    const error = (() => {
      try {
        geminiToChat({ contents: [user('q')], generationConfig: { responseJsonSchema: deep } }, 'm');
      } catch (e) {
        return e as GatewayError;
      }
      return assert.fail('not refused');
    })();
    assert.deepEqual(
      [error.code, error.details],
      [
        'capability_not_supported',
        { errors: [{ field: 'generationConfig.responseJsonSchema', problem: 'nests deeper than 64 levels' }] },
      ],
    );
  });
});
