/**
 * The `file_search` tool on chat completions (a gateway extension: OpenAI has it on the Responses API only), run by
 * the gateway for every upstream kind: the upstream is offered a `file_search` function and gets the passages; the
 * answer's citations are `url_citation` annotations (the only type chat parsers take) pointing at the cited file's
 * content, and its searches are in `file_search_results`. JSON and stream.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { authHeaders, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { dataFrames, readStream } from '../helpers/sse-client.js';
import { waitForValue } from '../helpers/wait.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import {
  CITATION_INDEXES,
  CITED_TEXT,
  FOREIGN_STORE,
  HITS,
  MODELS,
  OUR_STORE,
  SEARCH_QUERY,
  searchForever,
  searchThenCite,
  useFileSearchGateway,
} from '../helpers/file-search-fixture.js';

type Json = Record<string, unknown>;

const KINDS = Object.entries(MODELS) as Array<[keyof typeof MODELS, string]>;

function body(model: string, extra: Json = {}): string {
  return JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'What is the capital of France?' }],
    tools: [{ type: 'file_search', vector_store_ids: [OUR_STORE] }],
    ...extra,
  });
}

/** The citations the fixture's answer makes, as chat annotations on a gateway at `origin`. */
function expectedAnnotations(origin: string): Json[] {
  const sentence2 = CITED_TEXT.indexOf('Rome');
  return [
    {
      type: 'url_citation',
      url_citation: {
        url: `${origin}/v1/files/file-paris/content`,
        title: 'paris.txt',
        start_index: 0,
        end_index: CITATION_INDEXES[0],
      },
    },
    {
      type: 'url_citation',
      url_citation: {
        url: `${origin}/v1/files/file-rome/content`,
        title: 'rome.md',
        start_index: sentence2,
        end_index: CITATION_INDEXES[1],
      },
    },
  ];
}

const RESULTS = [
  {
    queries: [SEARCH_QUERY],
    results: [
      { file_id: 'file-paris', filename: 'paris.txt', score: 0.91, attributes: {}, text: HITS[0]?.text },
      { file_id: 'file-rome', filename: 'rome.md', score: 0.52, attributes: { lang: 'en' }, text: HITS[1]?.text },
    ],
  },
];

describe('file_search on chat completions, run by the gateway', () => {
  const fx = useFileSearchGateway();

  for (const [kind, model] of KINDS) {
    test(`${kind}: JSON — the passages reach the model; url_citation annotations and file_search_results`, async () => {
      fx.upstream.setDecide(searchThenCite);
      const seen = fx.upstream.modelCalls().length;
      const answer = await call(`${fx.gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: authHeaders(),
        body: body(model),
      });
      assert.equal(answer.status, 200, answer.text);
      const calls = fx.upstream.modelCalls().slice(seen);
      assert.equal(calls.length, 2);
      assert.match(JSON.stringify(calls[0]?.body?.tools), /"file_search"/);
      assert.doesNotMatch(JSON.stringify(calls[0]?.body?.tools), /vector_store_ids/);
      assert.match(JSON.stringify(calls[1]?.body), /\[2\] \(file: rome\.md\)/);
      const choice = (answer.json.choices as Json[])[0] as Json;
      const message = choice.message as Json;
      assert.equal(message.content, CITED_TEXT);
      assert.equal(message.tool_calls, undefined);
      assert.equal(choice.finish_reason, 'stop');
      assert.deepEqual(message.annotations, expectedAnnotations(fx.gw.url));
      const results = message.file_search_results as Json[];
      assert.match(String(results[0]?.id), /^fs_/);
      assert.deepEqual(
        results.map(({ id: _id, ...rest }) => rest),
        RESULTS,
      );
      assert.equal((answer.json.usage as Json).prompt_tokens, 84, 'both turns counted');
    });

    test(`${kind}: stream — text without markers, annotations on the deltas, results on the finishing chunk`, async () => {
      fx.upstream.setDecide(searchThenCite);
      const answer = await readStream(`${fx.gw.url}/v1/chat/completions`, body(model, { stream: true }), authHeaders());
      assert.equal(answer.status, 200, answer.text);
      const frames = dataFrames(answer.text);
      assert.equal(frames.at(-1), '[DONE]');
      const chunks = frames.slice(0, -1).map((frame) => JSON.parse(frame) as Json);
      const deltas = chunks.map((chunk) => ((chunk.choices as Json[])[0]?.delta ?? {}) as Json);
      assert.equal(deltas.map((delta) => delta.content ?? '').join(''), CITED_TEXT);
      assert.ok(
        deltas.every((delta) => delta.tool_calls === undefined),
        'the search calls are not shown',
      );
      assert.deepEqual(
        deltas.flatMap((delta) => (delta.annotations as Json[] | undefined) ?? []),
        expectedAnnotations(fx.gw.url),
      );
      const finishing = chunks.findIndex((chunk) => (chunk.choices as Json[])[0]?.finish_reason);
      assert.equal((chunks[finishing]?.choices as Json[])[0]?.finish_reason, 'stop');
      const results = deltas[finishing]?.file_search_results as Json[];
      assert.deepEqual(
        results.map(({ id: _id, ...rest }) => rest),
        RESULTS,
      );
    });
  }

  test("the request's usage record counts every turn, JSON and streamed (with the caller's include_usage)", async () => {
    fx.upstream.setDecide(searchThenCite);
    const usage = new SqliteUsageStore(fx.gw.store.db);
    const json = await call(`${fx.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(),
      body: body(MODELS.anthropic),
    });
    const streamed = await readStream(
      `${fx.gw.url}/v1/chat/completions`,
      body(MODELS.chat, { stream: true, stream_options: { include_usage: true } }),
      authHeaders(),
    );
    const frames = dataFrames(streamed.text);
    const shown = (JSON.parse(frames.at(-2) as string) as Json).usage as Json;
    assert.equal(shown.prompt_tokens, 84, 'the usage chunk shows both turns');
    for (const id of [json.headers['x-request-id'], streamed.headers['x-request-id']]) {
      const record = await waitForValue(
        `the usage record of ${String(id)}`,
        async () => (await usage.recent(1_000, false)).find((r) => r.requestId === id),
        (r) => r !== undefined,
        5_000,
      );
      assert.equal(record?.promptTokens, 84);
      assert.equal(record?.completionTokens, 24);
    }
  });

  test('a store the search does not know: 404 vector_store_not_found naming the field', async () => {
    const answer = await call(`${fx.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({
        model: MODELS.gemini,
        messages: [{ role: 'user', content: 'Hi' }],
        tools: [{ type: 'file_search', vector_store_ids: [OUR_STORE, FOREIGN_STORE] }],
      }),
    });
    assert.equal(answer.status, 404, answer.text);
    assert.equal(answer.json.code, 'vector_store_not_found');
    assert.equal(answer.json.details?.field, 'tools[0].vector_store_ids');
  });

  test('a model that keeps searching, streamed: 4 searches, a last turn without the tool, a clean end', async () => {
    fx.upstream.setDecide(searchForever);
    const seen = fx.upstream.modelCalls().length;
    const answer = await readStream(
      `${fx.gw.url}/v1/chat/completions`,
      body(MODELS.chat, { stream: true }),
      authHeaders(),
    );
    assert.equal(answer.status, 200, answer.text);
    const calls = fx.upstream.modelCalls().slice(seen);
    assert.equal(calls.length, 5);
    assert.equal(calls[4]?.body?.tool_choice, 'none');
    const frames = dataFrames(answer.text);
    assert.equal(frames.at(-1), '[DONE]');
    const last = JSON.parse(frames.at(-2) as string) as Json;
    const delta = (last.choices as Json[])[0]?.delta as Json;
    assert.equal((delta.file_search_results as Json[]).length, 4);
    assert.doesNotMatch(answer.text, /"tool_calls"/);
  });
});

describe("file_search on the gateway's own vector stores, with an id that is no store of the caller's", () => {
  const fx = useGateway();

  test('chat: 404 vector_store_not_found naming the tool field; nothing reaches the upstream', async () => {
    const answer = await call(fx.url('/v1/chat/completions'), {
      method: 'POST',
      headers: authHeaders(),
      body: body('gpt-4o-mini'),
    });
    assert.equal(answer.status, 404, answer.text);
    assert.equal(answer.json.code, 'vector_store_not_found');
    assert.equal(answer.json.details?.field, 'tools[0].vector_store_ids');
    assert.equal(fx.mock.requests.length, 0);
  });

  test('Responses: the same 404, before any model turn', async () => {
    const answer = await call(fx.url('/v1/responses'), {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        input: 'Hi',
        tools: [{ type: 'file_search', vector_store_ids: [OUR_STORE] }],
      }),
    });
    assert.equal(answer.status, 404, answer.text);
    assert.equal(answer.json.code, 'vector_store_not_found');
    assert.equal(fx.mock.requests.length, 0);
  });
});
