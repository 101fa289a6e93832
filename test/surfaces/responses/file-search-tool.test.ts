/**
 * The `file_search` tool on the Responses API, run by the gateway for every upstream kind (surfaces/file-search/):
 * the upstream is offered a `file_search` function, gets the passages as its result, and the answer carries a
 * `file_search_call` item and `file_citation` annotations where the model's markers were. JSON and stream.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { ADMIN_TOKEN, authHeaders } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { namedEvents, readStream } from '../../helpers/sse-client.js';
import {
  CITATION_INDEXES,
  CITED_TEXT,
  FOREIGN_STORE,
  HITS,
  MODELS,
  NATIVE_MODEL,
  OUR_STORE,
  SEARCH_QUERY,
  searchForever,
  searchSpent,
  searchThenCite,
  useFileSearchGateway,
} from '../../helpers/file-search-fixture.js';
import type { ScriptedRequest } from '../../helpers/upstreams/scripted.js';
import { KINDS, offeredTools } from '../../helpers/upstreams/scripted-kinds.js';

type Json = Record<string, unknown>;

function body(model: string, extra: Json = {}): string {
  return JSON.stringify({
    model,
    input: 'What is the capital of France?',
    tools: [{ type: 'file_search', vector_store_ids: [OUR_STORE], max_num_results: 5 }],
    store: false,
    ...extra,
  });
}

describe('file_search on the Responses API, run by the gateway', () => {
  const fx = useFileSearchGateway();

  for (const [kind, model] of KINDS) {
    test(`${kind}: JSON — the upstream is offered file_search and gets the passages; the answer cites them`, async () => {
      fx.upstream.setDecide(searchThenCite);
      const seen = fx.upstream.modelCalls().length;
      const answer = await call(`${fx.gw.url}/v1/responses`, {
        method: 'POST',
        headers: authHeaders(),
        body: body(model, { include: ['file_search_call.results'] }),
      });
      assert.equal(answer.status, 200, answer.text);
      const calls = fx.upstream.modelCalls().slice(seen);
      assert.equal(calls.length, 2, 'a search turn, then the answer');
      assert.deepEqual(offeredTools(calls[0] as ScriptedRequest), ['file_search']);
      const second = JSON.stringify((calls[1] as ScriptedRequest).body);
      assert.match(second, /\[1\] \(file: paris\.txt\)/);
      assert.match(second, /Paris is the capital of France\./);
      const output = answer.json.output as Json[];
      assert.deepEqual(
        output.map((item) => item.type),
        ['file_search_call', 'message'],
      );
      const searchItem = output[0] as Json;
      assert.match(String(searchItem.id), /^fs_/);
      assert.equal(searchItem.status, 'completed');
      assert.deepEqual(searchItem.queries, [SEARCH_QUERY]);
      assert.deepEqual(searchItem.results, [
        { attributes: {}, file_id: 'file-paris', filename: 'paris.txt', score: 0.91, text: HITS[0]?.text },
        { attributes: { lang: 'en' }, file_id: 'file-rome', filename: 'rome.md', score: 0.52, text: HITS[1]?.text },
      ]);
      const part = ((output[1] as Json).content as Json[])[0] as Json;
      assert.equal(part.text, CITED_TEXT);
      assert.deepEqual(part.annotations, [
        { type: 'file_citation', file_id: 'file-paris', filename: 'paris.txt', index: CITATION_INDEXES[0] },
        { type: 'file_citation', file_id: 'file-rome', filename: 'rome.md', index: CITATION_INDEXES[1] },
      ]);
      const usage = answer.json.usage as Json;
      assert.equal(usage.input_tokens, 84, 'both turns counted');
    });

    test(`${kind}: stream — the search's events in OpenAI's order, the citations as annotation events`, async () => {
      fx.upstream.setDecide(searchThenCite);
      const answer = await readStream(`${fx.gw.url}/v1/responses`, body(model, { stream: true }), authHeaders());
      assert.equal(answer.status, 200, answer.text);
      const events = namedEvents(answer.text);
      const types = events.map((e) => e.event);
      const at = (type: string) => types.indexOf(type);
      assert.ok(at('response.output_item.added') >= 0);
      const added = events.find((e) => e.event === 'response.output_item.added')?.data.item as Json;
      assert.deepEqual(
        { type: added.type, queries: added.queries, results: added.results, status: added.status },
        { type: 'file_search_call', queries: [], results: null, status: 'in_progress' },
      );
      const order = [
        'response.file_search_call.in_progress',
        'response.file_search_call.searching',
        'response.file_search_call.completed',
      ].map(at);
      assert.ok(
        order.every((i, n) => i > 0 && (n === 0 || i > (order[n - 1] as number))),
        types.join('\n'),
      );
      const done = events.filter((e) => e.event === 'response.output_item.done').map((e) => e.data.item as Json);
      assert.deepEqual(done[0], {
        id: added.id,
        type: 'file_search_call',
        status: 'completed',
        queries: [SEARCH_QUERY],
        results: null,
      });
      const text = events
        .filter((e) => e.event === 'response.output_text.delta')
        .map((e) => e.data.delta)
        .join('');
      assert.equal(text, CITED_TEXT);
      const annotations = events.filter((e) => e.event === 'response.output_text.annotation.added');
      assert.deepEqual(
        annotations.map((e) => [e.data.annotation_index, e.data.content_index, e.data.output_index, e.data.annotation]),
        [
          [
            0,
            0,
            1,
            { type: 'file_citation', file_id: 'file-paris', filename: 'paris.txt', index: CITATION_INDEXES[0] },
          ],
          [1, 0, 1, { type: 'file_citation', file_id: 'file-rome', filename: 'rome.md', index: CITATION_INDEXES[1] }],
        ],
      );
      const completed = events.at(-1);
      assert.equal(completed?.event, 'response.completed');
      const output = (completed?.data.response as Json).output as Json[];
      assert.deepEqual(
        output.map((item) => item.type),
        ['file_search_call', 'message'],
      );
      const part = ((output[1] as Json).content as Json[])[0] as Json;
      assert.equal(part.text, CITED_TEXT);
      assert.equal((part.annotations as Json[]).length, 2);
      const sequence = events.map((e) => e.data.sequence_number);
      assert.deepEqual(sequence, [...sequence.keys()]);
    });
  }

  test('a store the search does not know: 404 vector_store_not_found naming the field; nothing goes upstream', async () => {
    const seen = fx.upstream.modelCalls().length;
    const answer = await call(`${fx.gw.url}/v1/responses`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({
        model: MODELS.anthropic,
        input: 'Hi',
        tools: [
          { type: 'function', name: 'f' },
          { type: 'file_search', vector_store_ids: [FOREIGN_STORE] },
        ],
      }),
    });
    assert.equal(answer.status, 404, answer.text);
    assert.equal(answer.json.code, 'vector_store_not_found');
    assert.equal(answer.json.details?.field, 'tools[1].vector_store_ids');
    assert.equal(fx.upstream.modelCalls().length, seen);
  });

  for (const [kind, model] of KINDS) {
    test(`${kind}: a model that keeps searching: at most 4 searches, then one turn that must answer`, async () => {
      fx.upstream.setDecide(searchForever);
      const seen = fx.upstream.modelCalls().length;
      const answer = await call(`${fx.gw.url}/v1/responses`, {
        method: 'POST',
        headers: authHeaders(),
        body: body(model),
      });
      assert.equal(answer.status, 200, answer.text);
      const calls = fx.upstream.modelCalls().slice(seen);
      assert.equal(calls.length, 5);
      const last = calls[4]?.body ?? {};
      const choice = JSON.stringify(last.tool_choice ?? last.toolConfig);
      assert.match(choice, /none|NONE/, 'the last turn may not call the tool');
      const output = answer.json.output as Json[];
      assert.equal(output.filter((item) => item.type === 'file_search_call').length, 4);
      assert.equal(output.filter((item) => item.type === 'function_call').length, 0);
      assert.equal(answer.json.status, 'completed');
    });
  }

  test("kind openai with the caller's own OpenAI stores: forwarded natively, the tool as it came", async () => {
    fx.upstream.setDecide(searchThenCite);
    const seen = fx.upstream.modelCalls().length;
    const answer = await call(`${fx.gw.url}/v1/responses`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({
        model: NATIVE_MODEL,
        input: 'Hi',
        tools: [{ type: 'file_search', vector_store_ids: [FOREIGN_STORE] }],
      }),
    });
    const calls = fx.upstream.modelCalls().slice(seen);
    assert.equal(calls[0]?.api, 'responses', answer.text);
    assert.deepEqual((calls[0]?.body?.tools as Json[])[0], { type: 'file_search', vector_store_ids: [FOREIGN_STORE] });
  });

  test("kind openai with the caller's gateway stores: the gateway runs the search over chat", async () => {
    fx.upstream.setDecide(searchThenCite);
    const seen = fx.upstream.modelCalls().length;
    const answer = await call(`${fx.gw.url}/v1/responses`, {
      method: 'POST',
      headers: authHeaders(),
      body: body(NATIVE_MODEL),
    });
    assert.equal(answer.status, 200, answer.text);
    const calls = fx.upstream.modelCalls().slice(seen);
    assert.deepEqual(
      calls.map((c) => c.api),
      ['chat', 'chat'],
    );
    assert.equal((answer.json.output as Json[])[0]?.type, 'file_search_call');
  });
});

describe('file_search on the Responses API: what clients send back, failures, the openai SDK', () => {
  const fx = useFileSearchGateway();

  test('without include: results null', async () => {
    fx.upstream.setDecide(searchThenCite);
    const answer = await call(`${fx.gw.url}/v1/responses`, {
      method: 'POST',
      headers: authHeaders(),
      body: body(MODELS.anthropic),
    });
    assert.equal(answer.status, 200, answer.text);
    const item = (answer.json.output as Json[])[0] as Json;
    assert.equal(item.type, 'file_search_call');
    assert.equal(item.results, null);
    assert.deepEqual(item.queries, [SEARCH_QUERY]);
  });

  test("an earlier file_search_call item (the agents SDK's replay) and a reference to an fs_ id: read past", async () => {
    fx.upstream.setDecide(searchThenCite);
    const seen = fx.upstream.modelCalls().length;
    const answer = await call(`${fx.gw.url}/v1/responses`, {
      method: 'POST',
      headers: authHeaders(),
      body: body(MODELS.gemini, {
        input: [
          { role: 'user', content: 'Earlier question' },
          {
            type: 'file_search_call',
            id: 'fs_0123456789abcdef0123456789abcdef',
            status: 'completed',
            queries: ['earlier'],
            results: null,
          },
          { type: 'item_reference', id: 'fs_fedcba9876543210fedcba9876543210' },
          { role: 'assistant', content: [{ type: 'output_text', text: 'Earlier answer', annotations: [] }] },
          { role: 'user', content: 'What is the capital of France?' },
        ],
      }),
    });
    assert.equal(answer.status, 200, answer.text);
    const first = JSON.stringify(fx.upstream.modelCalls()[seen]?.body);
    assert.match(first, /Earlier answer/);
    assert.doesNotMatch(first, /fs_/);
  });

  test('a reference to an fs_ id on a model with a native upstream, the gateway running the search: read past too', async () => {
    fx.upstream.setDecide(searchThenCite);
    const seen = fx.upstream.modelCalls().length;
    const answer = await call(`${fx.gw.url}/v1/responses`, {
      method: 'POST',
      headers: authHeaders(),
      body: body(NATIVE_MODEL, {
        input: [
          { type: 'item_reference', id: 'fs_fedcba9876543210fedcba9876543210' },
          { role: 'user', content: 'What is the capital of France?' },
        ],
      }),
    });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(
      fx.upstream
        .modelCalls()
        .slice(seen)
        .map((c) => c.api),
      ['chat', 'chat'],
    );
  });

  test('a search that fails (a spent budget): the JSON answer is that error', async () => {
    fx.upstream.setDecide(searchSpent);
    const answer = await call(`${fx.gw.url}/v1/responses`, {
      method: 'POST',
      headers: authHeaders(),
      body: body(MODELS.chat),
    });
    assert.equal(answer.json.code, 'budget_exceeded', answer.text);
  });

  test('a search that fails, streamed: the stream ends with response.failed naming the error', async () => {
    fx.upstream.setDecide(searchSpent);
    const answer = await readStream(
      `${fx.gw.url}/v1/responses`,
      body(MODELS.anthropic, { stream: true }),
      authHeaders(),
    );
    assert.equal(answer.status, 200, answer.text);
    const events = namedEvents(answer.text);
    const last = events.at(-1);
    assert.equal(last?.event, 'response.failed', answer.text);
    assert.equal(((last?.data.response as Json).error as Json).code, 'budget_exceeded');
    assert.ok(events.some((e) => e.event === 'response.file_search_call.searching'));
  });

  test('the openai SDK: responses.create and responses.stream read the search and its citations', async () => {
    fx.upstream.setDecide(searchThenCite);
    const client = new OpenAI({ baseURL: `${fx.gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
    const request = {
      model: MODELS.anthropic,
      input: 'What is the capital of France?',
      tools: [{ type: 'file_search' as const, vector_store_ids: [OUR_STORE] }],
      include: ['file_search_call.results' as const],
      store: false,
    };
    const created = await client.responses.create(request);
    assert.equal(created.output_text, CITED_TEXT);
    const search = created.output.find((item) => item.type === 'file_search_call');
    assert.equal(search?.results?.[0]?.filename, 'paris.txt');
    const message = created.output.find((item) => item.type === 'message');
    const text = message?.type === 'message' ? message.content[0] : undefined;
    assert.deepEqual(text?.type === 'output_text' ? text.annotations : undefined, [
      { type: 'file_citation', file_id: 'file-paris', filename: 'paris.txt', index: CITATION_INDEXES[0] },
      { type: 'file_citation', file_id: 'file-rome', filename: 'rome.md', index: CITATION_INDEXES[1] },
    ]);
    const stream = client.responses.stream(request);
    const annotated: unknown[] = [];
    stream.on('response.output_text.annotation.added', (event) => annotated.push(event.annotation));
    const final = await stream.finalResponse();
    assert.equal(final.output_text, CITED_TEXT);
    assert.equal(annotated.length, 2);
    assert.deepEqual(annotated[0], {
      type: 'file_citation',
      file_id: 'file-paris',
      filename: 'paris.txt',
      index: CITATION_INDEXES[0],
    });
  });
});
