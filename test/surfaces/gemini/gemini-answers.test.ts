import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CatalogModel } from '../../../src/core/models/model-catalog.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { GATEWAY_ERRORS } from '../../../src/http/error-shape.js';
import type { ErrorCode } from '../../../src/errors/codes.js';
import type { StreamChunk, Usage } from '../../../src/providers/provider-contract.js';
import { completionToGemini } from '../../../src/surfaces/gemini/chat-to-gemini.js';
import { countTokensAnswer, countTokensToChat } from '../../../src/surfaces/gemini/count-tokens.js';
import {
  batchEmbedAnswer,
  batchEmbedToEmbeddings,
  embedContentAnswer,
  embedToEmbeddings,
  embeddingVectors,
} from '../../../src/surfaces/gemini/embeddings.js';
import {
  GeminiStream,
  geminiPassthroughEncoder,
  isGeminiCompleteEnd,
} from '../../../src/surfaces/gemini/gemini-stream.js';
import { geminiCallOf, geminiSurface } from '../../../src/surfaces/gemini/gemini-surface.js';
import { findGeminiModel, geminiModelList, geminiPageSize } from '../../../src/surfaces/gemini/models.js';
import { NativeForward, type StreamEncoder, type SurfaceCall } from '../../../src/surfaces/surface.js';
import { TranslationNotes } from '../../../src/surfaces/translation-notes.js';
import { withGeminiError } from '../../../src/wire/gemini.js';
import { geminiFinishReasonOf } from '../../../src/wire/gemini-values.js';

const IDS = { responseId: 'rid', model: 'gemini-x' };
const USAGE: Usage = {
  prompt_tokens: 10,
  completion_tokens: 7,
  total_tokens: 17,
  cache_read_tokens: 4,
  reasoning_tokens: 2,
};
/** Gemini's usageMetadata of USAGE: candidates without the reasoning, which is the thoughts. */
const USAGE_METADATA = {
  promptTokenCount: 10,
  candidatesTokenCount: 5,
  totalTokenCount: 17,
  cachedContentTokenCount: 4,
  thoughtsTokenCount: 2,
};

const chunk = (delta: Record<string, unknown>, finish: string | null = null): StreamChunk => ({
  chunk: { object: 'chat.completion.chunk', model: 'up-1', choices: [{ index: 0, delta, finish_reason: finish }] },
});
const text = (t: string) => chunk({ content: t });
const usageOnly: StreamChunk = {
  chunk: { object: 'chat.completion.chunk', choices: [], usage: USAGE },
  internal: true,
};

/** Every frame one stream writes: open, each chunk, then the end (with USAGE) or the failure. */
async function frames(encoder: StreamEncoder, chunks: StreamChunk[], failure?: GatewayError): Promise<string> {
  let out = encoder.open();
  for (const item of chunks) out += encoder.chunk(item);
  return out + (failure ? encoder.fail(failure, GATEWAY_ERRORS) : await encoder.end(USAGE));
}

/** One `alt=sse` event: one data line, then a blank line, CRLF as Google writes them. */
const event = (response: unknown) => `data: ${JSON.stringify(response)}\r\n\r\n`;
const said = (t: string) => ({
  candidates: [{ content: { role: 'model', parts: [{ text: t }] }, index: 0 }],
  modelVersion: 'up-1',
  responseId: 'rid',
});
const last = (parts: unknown[], finishReason = 'STOP') => ({
  candidates: [{ content: { role: 'model', parts }, finishReason, index: 0 }],
  usageMetadata: USAGE_METADATA,
  modelVersion: 'up-1',
  responseId: 'rid',
});

const FAILURE = new GatewayError('upstream_stream_error', { upstream: 'u' }, { headers: { 'retry-after': '3' } });
const FAILURE_BODY = {
  code: 'upstream_stream_error',
  message: FAILURE.message,
  details: { upstream: 'u' },
  error: {
    code: 502,
    message: FAILURE.message,
    status: 'INTERNAL',
    details: [
      {
        '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
        reason: 'UPSTREAM_STREAM_ERROR',
        domain: 'llm-gateway',
        metadata: { code: 'upstream_stream_error' },
      },
      { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '3s' },
    ],
  },
};

describe('Gemini streams from chat chunks (exact bytes)', () => {
  test('alt=sse, a text stream: one data line per chunk with text, the last one with the finish reason and the usage', async () => {
    const stream = new GeminiStream(IDS, 'sse');
    assert.equal(stream.contentType, 'text/event-stream; charset=utf-8');
    const out = await frames(stream, [
      chunk({ role: 'assistant', content: '' }),
      text('Hel'),
      text('lo'),
      chunk({}, 'stop'),
      usageOnly,
    ]);
    assert.equal(out, event(said('Hel')) + event(said('lo')) + event(last([{ text: '' }])));
    assert.equal(isGeminiCompleteEnd(event(last([{ text: '' }]))), true);
  });

  test('alt=sse, a tool call stream: the pieces of each call go out whole, as a functionCall with its id, in the last event', async () => {
    const call = (piece: Record<string, unknown>) => chunk({ tool_calls: [piece] });
    const out = await frames(new GeminiStream(IDS, 'sse'), [
      text('Reading.'),
      call({ index: 0, id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '' } }),
      call({ index: 0, function: { arguments: '{"file_path":' } }),
      call({ index: 0, function: { arguments: '"a.txt"}' } }),
      call({ index: 1, type: 'function', function: { name: 'list_directory', arguments: '{}' } }),
      chunk({}, 'tool_calls'),
    ]);
    const calls = [
      { functionCall: { id: 'call_1', name: 'read_file', args: { file_path: 'a.txt' } } },
      { functionCall: { id: 'call_rid_0_1', name: 'list_directory', args: {} } },
    ];
    assert.equal(out, event(said('Reading.')) + event(last(calls)));
  });

  test("alt=sse, a failure mid-stream: the frames so far, then one data line with the error (ours and Gemini's), then the end", async () => {
    const out = await frames(new GeminiStream(IDS, 'sse'), [text('partial ')], FAILURE);
    assert.equal(out, event(said('partial ')) + `data: ${JSON.stringify(FAILURE_BODY)}\r\n\r\n`);
    assert.equal(isGeminiCompleteEnd(out), false);
    assert.doesNotMatch(out, /^event:/m);
  });

  test('a call whose arguments are not a JSON object fails the stream (upstream_invalid_response); cut short by the token limit, it is `{}`', async () => {
    const broken = [chunk({ tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: '{"a":' } }] })];
    await assert.rejects(
      async () => frames(new GeminiStream(IDS, 'sse'), [...broken, chunk({}, 'tool_calls')]),
      (e: GatewayError) => e.code === 'upstream_invalid_response',
    );
    const cut = await frames(new GeminiStream(IDS, 'sse'), [...broken, chunk({}, 'length')]);
    assert.equal(cut, event(last([{ functionCall: { id: 'c', name: 'f', args: {} } }], 'MAX_TOKENS')));
  });

  test('the JSON array (no alt): `[`, the responses joined by `,\\r\\n`, `]`; a failure is its last element', async () => {
    const stream = new GeminiStream(IDS, 'json-array');
    assert.equal(stream.contentType, 'application/json; charset=utf-8');
    const out = await frames(stream, [text('Hel'), text('lo'), chunk({}, 'stop')]);
    assert.equal(
      out,
      `[${JSON.stringify(said('Hel'))},\r\n${JSON.stringify(said('lo'))},\r\n${JSON.stringify(last([{ text: '' }]))}]`,
    );
    assert.deepEqual(JSON.parse(out), [said('Hel'), said('lo'), last([{ text: '' }])]);
    const failed = await frames(new GeminiStream(IDS, 'json-array'), [text('partial ')], FAILURE);
    assert.equal(failed, `[${JSON.stringify(said('partial '))},\r\n${JSON.stringify(FAILURE_BODY)}]`);
    assert.deepEqual(JSON.parse(failed), [said('partial '), FAILURE_BODY]);
    assert.equal(
      await frames(new GeminiStream(IDS, 'json-array'), [], FAILURE),
      `[${JSON.stringify(FAILURE_BODY)}]`,
      'a failure before any text',
    );
    assert.equal(isGeminiCompleteEnd(failed), false);
  });

  test("a forwarded Gemini stream passes each response on in the caller's form, data lines only; its end is the finish reason", async () => {
    const upstream = [
      '{"candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}, "index": 0}]}',
      '{"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"},\n "finishReason": "STOP", "index": 0}]}',
    ];
    const forwarded = upstream.map((json): StreamChunk => ({
      chunk: { object: 'chat.completion.chunk', choices: [] },
      json,
    }));
    const sse = await frames(geminiPassthroughEncoder('sse'), forwarded);
    const oneLine = JSON.stringify(JSON.parse(upstream[1] as string));
    assert.equal(sse, `data: ${upstream[0]}\r\n\r\ndata: ${oneLine}\r\n\r\n`);
    assert.equal(
      isGeminiCompleteEnd(`data: ${upstream[1]}`),
      true,
      'Google writes `"finishReason": "STOP"`, with a space',
    );
    assert.equal(await frames(geminiPassthroughEncoder('json-array'), forwarded), `[${upstream[0]},\r\n${oneLine}]`);
    assert.equal(
      await frames(geminiPassthroughEncoder('sse'), forwarded.slice(0, 1), FAILURE),
      `data: ${upstream[0]}\r\n\r\ndata: ${JSON.stringify(FAILURE_BODY)}\r\n\r\n`,
    );
  });
});

describe('a chat completion as a GenerateContentResponse', () => {
  const completion = (message: Record<string, unknown>, finish: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: 'up-1',
      choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
      ...extra,
    });

  test('text, function calls with their ids (made when absent), finish reason, usage as usageMetadata, the upstream model', () => {
    const usage = {
      prompt_tokens: 10,
      completion_tokens: 7,
      total_tokens: 17,
      prompt_tokens_details: { cached_tokens: 4 },
      completion_tokens_details: { reasoning_tokens: 2 },
    };
    const calls = [
      { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
      { type: 'function', function: { name: 'g', arguments: '' } },
    ];
    assert.deepEqual(
      completionToGemini(completion({ content: 'Checking', tool_calls: calls }, 'tool_calls', { usage }), IDS),
      {
        candidates: [
          {
            content: {
              role: 'model',
              parts: [
                { text: 'Checking' },
                { functionCall: { id: 'call_1', name: 'f', args: { a: 1 } } },
                { functionCall: { id: 'call_rid_0_1', name: 'g', args: {} } },
              ],
            },
            finishReason: 'STOP',
            index: 0,
          },
        ],
        usageMetadata: USAGE_METADATA,
        modelVersion: 'up-1',
        responseId: 'rid',
      },
    );
  });

  test('nothing said: an empty text part; no usage: zeros; bad arguments: upstream_invalid_response', () => {
    const empty = completionToGemini(
      JSON.stringify({ choices: [{ message: { content: null }, finish_reason: 'length' }] }),
      IDS,
    );
    assert.deepEqual(empty, {
      candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'MAX_TOKENS', index: 0 }],
      usageMetadata: { promptTokenCount: 0, candidatesTokenCount: 0, totalTokenCount: 0 },
      modelVersion: 'gemini-x',
      responseId: 'rid',
    });
    const bad = completion(
      { content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '[1,' } }] },
      'tool_calls',
    );
    assert.throws(
      () => completionToGemini(bad, IDS),
      (e: GatewayError) => e.code === 'upstream_invalid_response',
    );
  });

  test('finish reasons', () => {
    const cases: Array<[string | null, string]> = [
      ['stop', 'STOP'],
      ['tool_calls', 'STOP'],
      ['function_call', 'STOP'],
      ['length', 'MAX_TOKENS'],
      ['content_filter', 'SAFETY'],
      [null, 'STOP'],
      ['odd', 'OTHER'],
    ];
    for (const [chat, gemini] of cases) assert.equal(geminiFinishReasonOf(chat), gemini, String(chat));
  });
});

describe("Gemini's error body, per status (withGeminiError)", () => {
  const cases: Array<[ErrorCode, number, string]> = [
    ['validation_failed', 400, 'INVALID_ARGUMENT'],
    ['authentication_required', 401, 'UNAUTHENTICATED'],
    ['route_not_allowed', 403, 'PERMISSION_DENIED'],
    ['model_not_found', 404, 'NOT_FOUND'],
    ['method_not_allowed', 405, 'FAILED_PRECONDITION'],
    ['payload_too_large', 413, 'FAILED_PRECONDITION'],
    ['rate_limited', 429, 'RESOURCE_EXHAUSTED'],
    ['client_closed_request', 499, 'CANCELLED'],
    ['internal_error', 500, 'INTERNAL'],
    ['upstream_error', 502, 'INTERNAL'],
    ['upstream_unreachable', 503, 'UNAVAILABLE'],
    ['upstream_first_byte_timeout', 504, 'DEADLINE_EXCEEDED'],
  ];
  for (const [code, status, name] of cases) {
    test(`${code}: HTTP ${status}, status ${name}, our body beside it`, () => {
      const error = new GatewayError(code, {});
      assert.equal(error.status, status);
      assert.deepEqual(withGeminiError(error.toBody(), error.status, error.headers), {
        code,
        message: error.message,
        details: {},
        error: {
          code: status,
          message: error.message,
          status: name,
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
              reason: code.toUpperCase(),
              domain: 'llm-gateway',
              metadata: { code },
            },
          ],
        },
      });
    });
  }

  test('Retry-After in seconds is a RetryInfo (what Gemini CLI waits for); a 400 names its fields in a BadRequest', () => {
    const limited = new GatewayError('budget_exceeded', {}, { headers: { 'retry-after': '3600' } });
    assert.deepEqual(withGeminiError(limited.toBody(), limited.status, limited.headers).error.details?.[1], {
      '@type': 'type.googleapis.com/google.rpc.RetryInfo',
      retryDelay: '3600s',
    });
    const dated = withGeminiError(limited.toBody(), 429, { 'retry-after': 'Wed, 21 Oct 2026 07:28:00 GMT' });
    assert.equal(dated.error.details?.length, 1, 'an HTTP date is not a delay in seconds');
    const invalid = new GatewayError('validation_failed', { errors: [{ field: 'contents', problem: 'is required' }] });
    assert.deepEqual(withGeminiError(invalid.toBody(), 400).error.details?.[1], {
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: 'contents', description: 'is required' }],
    });
  });
});

describe('the Gemini surface (ApiSurface)', () => {
  const call = (extra: Partial<SurfaceCall>): SurfaceCall => ({ caller: 'k', body: {}, ...extra });
  const body = { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }], safetySettings: [] };

  test("the model and the stream are the URL's; translated for a chat upstream; the answer and the encoder keep the call's ids", async () => {
    const surface = geminiSurface(
      () => false,
      () => 'rid',
    );
    const notes = new TranslationNotes('tolerant');
    const streamed = call({ pathModel: 'gemini-x', pathStream: 'json-array', notes });
    assert.deepEqual(await surface.toChat(body, streamed), {
      model: 'gemini-x',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
    });
    assert.deepEqual(notes.dropped, ['safetySettings']);
    assert.equal(
      (surface.encoder(streamed) as { contentType?: string }).contentType,
      'application/json; charset=utf-8',
    );
    const plain = call({ pathModel: 'gemini-x' });
    assert.equal(((await surface.toChat(body, plain)) as { stream?: boolean }).stream, undefined);
    const answer = await surface.answer(
      Buffer.from(
        JSON.stringify({
          model: 'up-1',
          choices: [{ index: 0, message: { content: 'Hello' }, finish_reason: 'stop' }],
        }),
      ),
      plain,
    );
    assert.equal(JSON.parse(answer.toString()).responseId, 'rid');
    assert.equal(surface.isCompleteEnd(event(last([]))), true);
  });

  test('to a model Gemini serves, forwarded as it came: the body untouched, the model and the stream beside it for the pipeline', async () => {
    const surface = geminiSurface(
      (model) => model === 'gemini-x',
      () => 'rid',
    );
    const sse = call({ pathModel: 'gemini-x', pathStream: 'sse' });
    const forward = await surface.toChat(body, sse);
    assert.ok(forward instanceof NativeForward);
    assert.deepEqual(forward.body, { ...body, model: 'gemini-x', stream: true });
    assert.equal(forward.unchanged, true);
    assert.equal(forward.asChat?.messages.length, 1, 'countable for the context window');
    // The pipeline is to pass the call to nativeEncoder (the form of the stream is the URL's).
    const nativeEncoder = surface.nativeEncoder as unknown as (c?: SurfaceCall) => { contentType: string };
    assert.equal(nativeEncoder(sse).contentType, 'text/event-stream; charset=utf-8');
  });

  test('the URL: model and action, the stream form from alt', () => {
    assert.deepEqual(geminiCallOf('gemini-2.5-flash:generateContent', undefined), {
      model: 'gemini-2.5-flash',
      action: 'generateContent',
    });
    assert.deepEqual(geminiCallOf('m:streamGenerateContent', 'sse'), {
      model: 'm',
      action: 'streamGenerateContent',
      stream: 'sse',
    });
    assert.deepEqual(geminiCallOf('m:streamGenerateContent', undefined), {
      model: 'm',
      action: 'streamGenerateContent',
      stream: 'json-array',
    });
    assert.deepEqual(geminiCallOf('m:streamGenerateContent', 'json'), {
      model: 'm',
      action: 'streamGenerateContent',
      stream: 'json-array',
    });
    for (const segment of ['m', ':generateContent', 'm:predict', `${'x'.repeat(300)}:generateContent`])
      assert.equal(geminiCallOf(segment, undefined), undefined, segment);
    assert.throws(
      () => geminiCallOf('m:streamGenerateContent', ['sse', 'sse']),
      (e: GatewayError) => e.code === 'invalid_query_parameter',
    );
  });
});

describe('countTokens, embeddings and models', () => {
  test('countTokens: contents, or a whole generateContentRequest; not both', () => {
    assert.deepEqual(countTokensToChat({ contents: [{ parts: [{ text: 'Hi' }] }] }, 'm').messages, [
      { role: 'user', content: 'Hi' },
    ]);
    const whole = countTokensToChat(
      {
        generateContentRequest: {
          model: 'models/m',
          contents: [{ parts: [{ text: 'Hi' }] }],
          systemInstruction: { parts: [{ text: 'S' }] },
          safetySettings: [],
        },
      },
      'm',
    );
    assert.deepEqual(whole.messages, [
      { role: 'system', content: 'S' },
      { role: 'user', content: 'Hi' },
    ]);
    assert.throws(
      () => countTokensToChat({ contents: [], generateContentRequest: { contents: [] } }, 'm'),
      (e: GatewayError) => e.code === 'validation_failed',
    );
    assert.deepEqual(countTokensAnswer(12), { totalTokens: 12 });
  });

  test('embedContent and batchEmbedContents as one embeddings call, and its vectors back', () => {
    const notes = new TranslationNotes('tolerant');
    assert.deepEqual(
      embedToEmbeddings(
        { content: { parts: [{ text: 'a' }, { text: 'b' }] }, taskType: 'RETRIEVAL_QUERY', outputDimensionality: 8 },
        'e',
        notes,
      ),
      { model: 'e', input: 'a\nb', dimensions: 8 },
    );
    assert.deepEqual(notes.dropped, ['taskType']);
    const batch = {
      requests: [
        { model: 'models/e', content: { role: 'user', parts: [{ text: 'x' }] } },
        { content: { parts: [{ text: 'y' }] } },
      ],
    };
    assert.deepEqual(batchEmbedToEmbeddings(batch as never, 'e'), { model: 'e', input: ['x', 'y'] });
    assert.throws(
      () => batchEmbedToEmbeddings({ requests: [{ model: 'models/other', content: { parts: [{ text: 'x' }] } }] }, 'e'),
      (e: GatewayError) => e.code === 'validation_failed',
    );
    const sizes = {
      requests: [
        { content: { parts: [{ text: 'x' }] }, outputDimensionality: 8 },
        { content: { parts: [{ text: 'y' }] }, outputDimensionality: 16 },
      ],
    };
    assert.throws(
      () => batchEmbedToEmbeddings(sizes, 'e'),
      (e: GatewayError) => e.code === 'capability_not_supported',
    );
    const openai = Buffer.from(
      JSON.stringify({
        data: [
          { index: 1, embedding: [0.3] },
          { index: 0, embedding: [0.1, 0.2] },
        ],
      }),
    );
    const vectors = embeddingVectors({ kind: 'openai', body: openai, usage: undefined }, 2);
    assert.deepEqual(batchEmbedAnswer(vectors), { embeddings: [{ values: [0.1, 0.2] }, { values: [0.3] }] });
    assert.deepEqual(
      embedContentAnswer(embeddingVectors({ kind: 'vectors', vectors: [[1, 2]], usage: undefined }, 1)),
      { embedding: { values: [1, 2] } },
    );
    for (const data of [
      [{ embedding: [1] }],
      [
        { index: 0, embedding: 'AAAA' },
        { index: 1, embedding: [1] },
      ],
      [
        { index: 0, embedding: [1] },
        { index: 0, embedding: [2] },
      ],
    ]) {
      assert.throws(
        () => embeddingVectors({ kind: 'openai', body: Buffer.from(JSON.stringify({ data })), usage: undefined }, 2),
        (e: GatewayError) => e.code === 'upstream_invalid_response',
      );
    }
  });

  test("models: Gemini's Model from the catalog, paged by pageSize and the catalog's cursor; one by name or alias", () => {
    const model = (id: string, extra: Partial<CatalogModel> = {}): CatalogModel => ({
      id,
      object: 'model',
      provider: 'p',
      upstream_model: id,
      context_window: null,
      created_at: null,
      owned_by: null,
      source: 'config',
      ...extra,
    });
    const models = [
      model('chat-a', { context_window: 128_000, aliases: ['fast'] }),
      model('emb', { type: 'embedding', description: 'Embeds.' }),
    ];
    assert.deepEqual(geminiModelList({ object: 'list', data: models, next_token: 'tok' }), {
      models: [
        {
          name: 'models/chat-a',
          displayName: 'chat-a',
          supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'],
          inputTokenLimit: 128_000,
        },
        {
          name: 'models/emb',
          displayName: 'emb',
          supportedGenerationMethods: ['embedContent', 'batchEmbedContents'],
          description: 'Embeds.',
        },
      ],
      nextPageToken: 'tok',
    });
    assert.equal(findGeminiModel(models, 'models/fast').name, 'models/chat-a');
    assert.equal(findGeminiModel(models, 'emb').name, 'models/emb');
    assert.throws(
      () => findGeminiModel(models, 'models/nope'),
      (e: GatewayError) => e.code === 'model_not_found',
    );
    assert.deepEqual([undefined, '0', '7', '5000'].map(geminiPageSize), [50, 50, 7, 1000]);
    for (const bad of ['-1', '1e3', ' 5', ['1', '2']])
      assert.throws(
        () => geminiPageSize(bad),
        (e: GatewayError) => e.code === 'invalid_query_parameter',
      );
  });
});
