import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, GoogleGenAI } from '@google/genai';
import type { CatalogModel } from '../../../src/core/models/model-catalog.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import type { ChatRequestBody, StreamChunk } from '../../../src/providers/provider-contract.js';
import { completionToGemini } from '../../../src/surfaces/gemini/chat-to-gemini.js';
import { countTokensAnswer, countTokensToChat } from '../../../src/surfaces/gemini/count-tokens.js';
import { batchEmbedAnswer, batchEmbedToEmbeddings } from '../../../src/surfaces/gemini/embeddings.js';
import { GeminiStream } from '../../../src/surfaces/gemini/gemini-stream.js';
import { geminiCallOf } from '../../../src/surfaces/gemini/gemini-surface.js';
import { findGeminiModel, geminiModelList, geminiPageSize } from '../../../src/surfaces/gemini/models.js';
import { geminiToChat } from '../../../src/surfaces/gemini/request-to-chat.js';
import { withGeminiError } from '../../../src/wire/gemini.js';

/**
 * Google's own SDK (@google/genai 3.1.0, pinned) reading what the Gemini surface writes. A node:http server stands
 * where the gateway's Gemini paths will be mounted: it takes each request the SDK sends through the surface's
 * translation (so the SDK's real request shapes are translated too), plays a chat upstream's answer, and writes it
 * back with the surface's encoders. The mounting itself (auth, limits, the pipeline) is tested where it is done.
 */
const USAGE = { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 };
const MODELS: CatalogModel[] = ['chat-a', 'chat-b', 'chat-c'].map((id) => ({
  id,
  object: 'model',
  provider: 'p',
  upstream_model: id,
  context_window: 8192,
  created_at: null,
  owned_by: null,
  source: 'config',
}));

/** What the server's chat upstream saw: each translated request, in order. */
const seen: ChatRequestBody[] = [];

/** The chat upstream's turn: a call of read_file while there are tools and no result yet, else text. */
function reply(chat: ChatRequestBody): { text: string; call?: { id: string; name: string; arguments: string } } {
  const lastMessage = chat.messages.at(-1);
  if (lastMessage?.role === 'tool') return { text: `The file says: ${String(lastMessage.content)}` };
  if (Array.isArray(chat.tools) && chat.tools.length > 0)
    return { text: '', call: { id: 'read_file_1_0', name: 'read_file', arguments: '{"file_path":"a.txt"}' } };
  return { text: 'Hello from the gateway' };
}

function chunkOf(delta: Record<string, unknown>, finish: string | null = null): StreamChunk {
  return {
    chunk: { object: 'chat.completion.chunk', model: 'up-1', choices: [{ index: 0, delta, finish_reason: finish }] },
  };
}

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://localhost');
  let raw = '';
  for await (const piece of request) raw += String(piece);
  const body: never = raw === '' ? (undefined as never) : (JSON.parse(raw) as never);
  const json = (status: number, value: unknown) =>
    response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(value));
  if (request.method === 'GET') {
    const name = url.pathname.slice('/v1beta/'.length);
    if (name !== 'models') return void json(200, findGeminiModel(MODELS, name));
    const size = geminiPageSize(url.searchParams.get('pageSize') ?? undefined);
    const start = Number(url.searchParams.get('pageToken') ?? 0);
    const next = start + size < MODELS.length ? String(start + size) : undefined;
    return void json(
      200,
      geminiModelList({
        object: 'list',
        data: MODELS.slice(start, start + size),
        ...(next ? { next_token: next } : {}),
      }),
    );
  }
  const call = geminiCallOf(
    url.pathname.slice(url.pathname.lastIndexOf('/') + 1),
    url.searchParams.get('alt') ?? undefined,
  );
  assert.ok(call, url.pathname);
  if (call.action === 'countTokens')
    return void json(200, countTokensAnswer(countTokensToChat(body, call.model).messages.length * 10));
  if (call.action === 'batchEmbedContents') {
    const embeddings = batchEmbedToEmbeddings(body, call.model);
    return void json(200, batchEmbedAnswer((embeddings.input as string[]).map((text) => [text.length, 0.5])));
  }
  if (call.model === 'limited') {
    const error = new GatewayError('rate_limited', {}, { headers: { 'retry-after': '2' } });
    return void json(error.status, withGeminiError(error.toBody(), error.status, error.headers));
  }
  const chat = geminiToChat(body, call.model, { stream: call.stream !== undefined });
  seen.push(chat);
  const turn = reply(chat);
  const ids = { responseId: 'rid-1', model: call.model };
  if (call.stream === undefined) {
    const message = {
      role: 'assistant',
      content: turn.text,
      ...(turn.call ? { tool_calls: [{ id: turn.call.id, type: 'function', function: turn.call }] } : {}),
    };
    const completion = {
      id: 'c',
      object: 'chat.completion',
      model: 'up-1',
      choices: [{ index: 0, message, finish_reason: turn.call ? 'tool_calls' : 'stop' }],
      usage: USAGE,
    };
    return void json(200, completionToGemini(JSON.stringify(completion), ids));
  }
  const encoder = new GeminiStream(ids, call.stream);
  response.writeHead(200, { 'content-type': encoder.contentType });
  // One write per frame, as the pipeline writes them: the SDK must put the events together itself.
  response.write(encoder.open() + encoder.chunk(chunkOf({ role: 'assistant', content: '' })));
  for (const word of turn.text.split(/(?<= )/))
    if (word !== '') response.write(encoder.chunk(chunkOf({ content: word })));
  if (call.model === 'broken')
    return void response.end(encoder.fail(new GatewayError('upstream_stream_error', { upstream: 'u' })));
  if (turn.call)
    response.write(
      encoder.chunk(
        chunkOf({
          tool_calls: [
            {
              index: 0,
              id: turn.call.id,
              type: 'function',
              function: { name: turn.call.name, arguments: turn.call.arguments },
            },
          ],
        }),
      ),
    );
  response.write(encoder.chunk(chunkOf({}, turn.call ? 'tool_calls' : 'stop')));
  response.end(encoder.end(USAGE));
}

describe('@google/genai 3.1.0 reads what the Gemini surface writes', () => {
  let server: Server;
  let ai: GoogleGenAI;

  before(async () => {
    server = createServer((request, response) => {
      handle(request, response).catch((error: unknown) => response.writeHead(500).end(String(error)));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    ai = new GoogleGenAI({
      apiKey: 'gw-key',
      httpOptions: { baseUrl: `http://127.0.0.1:${port}`, apiVersion: 'v1beta' },
    });
  });

  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  test('generateContent: the text, the usage, the ids', async () => {
    const answer = await ai.models.generateContent({
      model: 'gemini-x',
      contents: 'Hi',
      config: { systemInstruction: 'Be brief.', temperature: 0.2 },
    });
    assert.equal(answer.text, 'Hello from the gateway');
    assert.equal(answer.responseId, 'rid-1');
    assert.equal(answer.modelVersion, 'up-1');
    assert.equal(answer.candidates?.[0]?.finishReason, 'STOP');
    assert.deepEqual(answer.usageMetadata, { promptTokenCount: 12, candidatesTokenCount: 5, totalTokenCount: 17 });
    assert.deepEqual(seen.at(-1), {
      model: 'gemini-x',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      temperature: 0.2,
    });
  });

  test('generateContentStream, a tool round trip: the whole functionCall with its id, then its result answered by that id', async () => {
    const tools = [
      {
        functionDeclarations: [
          {
            name: 'read_file',
            description: 'Reads a file',
            parametersJsonSchema: { type: 'object', properties: { file_path: { type: 'string' } } },
          },
        ],
      },
    ];
    const first = await ai.models.generateContentStream({
      model: 'gemini-x',
      contents: 'Read a.txt',
      config: { tools },
    });
    const calls = [];
    for await (const chunk of first) calls.push(...(chunk.functionCalls ?? []));
    assert.deepEqual(calls, [{ id: 'read_file_1_0', name: 'read_file', args: { file_path: 'a.txt' } }]);
    const history = [
      { role: 'user', parts: [{ text: 'Read a.txt' }] },
      { role: 'model', parts: [{ functionCall: calls[0] }] },
      {
        role: 'user',
        parts: [{ functionResponse: { id: 'read_file_1_0', name: 'read_file', response: { output: 'token-42' } } }],
      },
    ];
    const second = await ai.models.generateContentStream({ model: 'gemini-x', contents: history, config: { tools } });
    let text = '';
    let finish: string | undefined;
    for await (const chunk of second) {
      text += chunk.text ?? '';
      finish = chunk.candidates?.[0]?.finishReason ?? finish;
    }
    assert.equal(text, 'The file says: {"output":"token-42"}');
    assert.equal(finish, 'STOP');
    assert.deepEqual(seen.at(-1)?.messages.slice(1), [
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'read_file_1_0',
            type: 'function',
            function: { name: 'read_file', arguments: '{"file_path":"a.txt"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'read_file_1_0', content: '{"output":"token-42"}' },
    ]);
  });

  test('a failure in the middle of a stream: the text before it, then an ApiError with its status', async () => {
    const stream = await ai.models.generateContentStream({ model: 'broken', contents: 'Hi' });
    let text = '';
    const failure = await (async () => {
      try {
        for await (const chunk of stream) text += chunk.text ?? '';
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    assert.ok(failure instanceof ApiError, String(failure));
    assert.equal(failure.status, 502);
    assert.match(failure.message, /INTERNAL/);
    assert.equal(text, 'Hello from the gateway');
  });

  test('an error answer: ApiError with the status, the body as its message', async () => {
    const failure = await ai.models
      .generateContent({ model: 'limited', contents: 'Hi' })
      .catch((error: unknown) => error);
    assert.ok(failure instanceof ApiError);
    assert.equal(failure.status, 429);
    const body = JSON.parse(failure.message) as {
      code: string;
      error: { status: string; details: Array<Record<string, unknown>> };
    };
    assert.equal(body.code, 'rate_limited');
    assert.equal(body.error.status, 'RESOURCE_EXHAUSTED');
    assert.deepEqual(body.error.details[1], { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '2s' });
  });

  test('countTokens, embedContent (the SDK calls batchEmbedContents), models.list paged and models.get', async () => {
    // The server counts 10 a message: the SDK sends these two strings as one user content of two parts.
    assert.equal((await ai.models.countTokens({ model: 'gemini-x', contents: ['one', 'two'] })).totalTokens, 10);
    const embedded = await ai.models.embedContent({ model: 'emb', contents: ['abc', 'de'] });
    assert.deepEqual(
      embedded.embeddings?.map((e) => e.values),
      [
        [3, 0.5],
        [2, 0.5],
      ],
    );
    const names: string[] = [];
    for await (const model of await ai.models.list({ config: { pageSize: 2 } })) names.push(model.name ?? '');
    assert.deepEqual(names, ['models/chat-a', 'models/chat-b', 'models/chat-c']);
    const model = await ai.models.get({ model: 'chat-b' });
    assert.deepEqual(
      [model.name, model.inputTokenLimit, model.supportedActions],
      ['models/chat-b', 8192, ['generateContent', 'streamGenerateContent', 'countTokens']],
    );
  });
});
