/**
 * Which model an answer names (docs/compatibility.md, "Which model an answer names"): the model the upstream says
 * answered (OpenAI answers `gpt-4o-mini-2024-07-18` for `gpt-4o-mini`), else the one the gateway asked it for (the
 * config's `upstream_model` of the caller's `mini`) — on every surface (chat, Responses, Messages, Gemini's
 * `modelVersion`), in a JSON answer and in every event of a stream alike, the stream's first event included (it
 * waits for the upstream's first chunk). A mock OpenAI-compatible upstream on a real socket answers with a dated
 * snapshot name, or with none.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { authHeaders, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { dataFrames, namedEvents, readStream } from '../helpers/sse-client.js';

/** What the caller asks for, what the gateway asks the upstream for, and what the upstream says answered. */
const ASKED = 'mini';
const SENT = 'gpt-4o-mini';
const ANSWERED = 'gpt-4o-mini-2024-07-18';

/** A chat completion naming `model` (or no model at all). */
function completion(model: string | undefined) {
  return {
    id: 'chatcmpl-m',
    object: 'chat.completion',
    created: 1_700_000_000,
    ...(model === undefined ? {} : { model }),
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hi there' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
  };
}

/** A streamed chat completion whose every chunk names `model` (or none). */
function chunks(model: string | undefined): string[] {
  const named = model === undefined ? {} : { model };
  const chunk = (delta: object, finish: string | null, usage?: object) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-m', object: 'chat.completion.chunk', created: 1, ...named, choices: usage ? [] : [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
  return [
    chunk({ role: 'assistant', content: 'Hi' }, null),
    chunk({ content: ' there' }, null),
    chunk({}, 'stop'),
    chunk({}, null, { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 }),
    'data: [DONE]\n\n',
  ];
}

interface Surface {
  name: string;
  path: (stream: boolean) => string;
  body: (stream: boolean) => object;
  headers?: Record<string, string>;
  /** The model(s) a JSON answer names. */
  fromJson: (json: Record<string, unknown>) => unknown[];
  /** The model each event of a stream names (every one that names one). */
  fromStream: (text: string) => unknown[];
}

const SURFACES: Surface[] = [
  {
    name: 'chat completions',
    path: () => '/v1/chat/completions',
    body: (stream) => ({ model: ASKED, stream, messages: [{ role: 'user', content: 'Hi' }] }),
    fromJson: (json) => [json.model],
    fromStream: (text) =>
      dataFrames(text)
        .filter((d) => d !== '[DONE]')
        .map((d) => (JSON.parse(d) as { model?: unknown }).model),
  },
  {
    name: 'Responses',
    path: () => '/v1/responses',
    body: (stream) => ({ model: ASKED, stream, input: 'Hi' }),
    fromJson: (json) => [json.model],
    fromStream: (text) =>
      namedEvents(text)
        .map((e) => e.data.response as { model?: unknown } | undefined)
        .filter((r) => r !== undefined)
        .map((r) => r.model),
  },
  {
    name: 'Messages',
    path: () => '/v1/messages',
    body: (stream) => ({ model: ASKED, stream, max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }),
    headers: { 'anthropic-version': '2023-06-01' },
    fromJson: (json) => [json.model],
    fromStream: (text) =>
      namedEvents(text)
        .filter((e) => e.event === 'message_start')
        .map((e) => (e.data.message as { model?: unknown }).model),
  },
  {
    name: 'Gemini',
    path: (stream) => `/v1beta/models/${ASKED}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
    body: () => ({ contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] }),
    fromJson: (json) => [json.modelVersion],
    fromStream: (text) =>
      text
        .split('\r\n\r\n')
        .filter((frame) => frame.startsWith('data: '))
        .map((frame) => (JSON.parse(frame.slice(6)) as { modelVersion?: unknown }).modelVersion),
  },
];

describe('which model an answer names: the upstream’s, else the one asked of it; JSON and stream alike', () => {
  const fixture = useGateway({
    configFile: {
      name: 'models.yaml',
      text: `models:\n  - { id: ${ASKED}, upstream: default, upstream_model: ${SENT} }\n`,
    },
  });

  for (const surface of SURFACES) {
    for (const [upstreamNames, expected] of [
      [ANSWERED, ANSWERED],
      [undefined, SENT],
    ] as const) {
      const label = upstreamNames === undefined ? 'the upstream names none' : 'the upstream names its snapshot';
      test(`${surface.name}: ${label}`, async () => {
        fixture.mock.enqueue({ kind: 'json', body: completion(upstreamNames) });
        const json = await call(fixture.url(surface.path(false)), {
          method: 'POST',
          headers: authHeaders(surface.headers),
          body: JSON.stringify(surface.body(false)),
        });
        assert.equal(json.status, 200, json.text);
        assert.equal((fixture.mock.chatRequests()[0]?.json as { model?: unknown }).model, SENT);
        assert.deepEqual(surface.fromJson(json.json), [expected], 'the JSON answer');

        fixture.mock.enqueue({ kind: 'stream', chunks: chunks(upstreamNames) });
        const streamed = await readStream(
          fixture.url(surface.path(true)),
          JSON.stringify(surface.body(true)),
          authHeaders(surface.headers),
        );
        assert.equal(streamed.status, 200, streamed.text);
        const named = surface.fromStream(streamed.text);
        assert.ok(named.length > 0, streamed.text);
        assert.deepEqual(new Set(named), new Set([expected]), `every event of the stream: ${streamed.text}`);
      });
    }
  }

  test("a first chunk that names no model (Azure's content filter) does not open the stream: its first event waits", async () => {
    const filter = `data: ${JSON.stringify({ id: '', object: '', created: 0, model: '', choices: [], prompt_filter_results: [] })}\n\n`;
    for (const surface of SURFACES.filter((s) => s.name === 'Responses' || s.name === 'Messages')) {
      // Each chunk its own write, 20 ms apart: the filter chunk is an upstream read of its own.
      fixture.mock.enqueue({ kind: 'stream', chunks: [filter, ...chunks(ANSWERED)], delayMs: 20 });
      const streamed = await readStream(
        fixture.url(surface.path(true)),
        JSON.stringify(surface.body(true)),
        authHeaders(surface.headers),
      );
      assert.equal(streamed.status, 200, streamed.text);
      assert.deepEqual(new Set(surface.fromStream(streamed.text)), new Set([ANSWERED]), streamed.text);
    }
  });
});
