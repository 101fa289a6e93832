/**
 * A model's `file_search` calls as an upstream may send them: the fields inside a tool call are passed on as they
 * came (providers/openai-compatible/normalise-answer.ts), so a call without `function`, or with `arguments` that are
 * an object or null, reached `call.function.name` / `args.trim()` in the search loop: a TypeError, a 500 after the
 * model's turn was paid for. Each is read by its type now (surfaces/tool-arguments.ts), as the other surfaces do.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { fixedSearch, OUR_STORE } from '../../helpers/file-search-fixture.js';

type Json = Record<string, unknown>;

describe('file_search calls of odd shapes from the upstream', () => {
  let server: Server;
  let gw: TestGateway;
  /** The tool calls the next first turn answers with; later turns answer text. */
  let calls: unknown[] = [];
  const bodies: Json[] = [];
  const { search, requests } = fixedSearch();

  before(async () => {
    server = createServer((req, res) => {
      let text = '';
      req.on('data', (part: Buffer) => (text += part.toString()));
      req.on('end', () => {
        const body = JSON.parse(text) as Json;
        bodies.push(body);
        const searched = (body.messages as Json[]).some((m) => m.role === 'tool');
        const message = searched
          ? { role: 'assistant', content: 'Done.' }
          : { role: 'assistant', content: null, tool_calls: calls };
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            created: 1,
            model: 'm-chat',
            choices: [{ index: 0, message, finish_reason: searched ? 'stop' : 'tool_calls' }],
            usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    gw = await startGateway({
      env: { FS_UPSTREAM_KEY: 'sk-file-search-0123456789' },
      fileSearch: search,
      configFile: {
        name: 'odd-calls.yaml',
        text: [
          'upstreams:',
          `  - { name: compat, kind: openai-compatible, base_url: "${origin}/v1", api_key_env: FS_UPSTREAM_KEY }`,
          'models:',
          '  - { id: chat-model, upstream: compat, upstream_model: m-chat }',
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw.close();
    await new Promise((resolve) => server.close(resolve));
  });

  const ask = () =>
    call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({
        model: 'chat-model',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'file_search', vector_store_ids: [OUR_STORE] }],
      }),
    });

  test('arguments sent as an object are read as that object; the search runs', async () => {
    calls = [{ id: 'call_1', type: 'function', function: { name: 'file_search', arguments: { queries: ['paris'] } } }];
    const before = requests.length;
    const answer = await ask();
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(requests.slice(before).at(-1)?.queries, ['paris']);
    const message = ((answer.json.choices as Json[])[0] as Json).message as Json;
    assert.equal(message.content, 'Done.');
    // The next turn sees its call well formed, and the result answers it.
    const next = bodies.at(-1)?.messages as Json[];
    const assistant = next.find((m) => m.role === 'assistant') as Json;
    assert.deepEqual(assistant.tool_calls, [
      { id: 'call_1', type: 'function', function: { name: 'file_search', arguments: '{"queries":["paris"]}' } },
    ]);
    assert.equal((next.find((m) => m.role === 'tool') as Json).tool_call_id, 'call_1');
  });

  test('null arguments, a call without function or id: no 500', async () => {
    calls = [
      { id: 'call_2', type: 'function', function: { name: 'file_search', arguments: null } },
      { type: 'function' },
      { function: { name: 'file_search', arguments: '{"queries":["rome"]}' } },
    ];
    const answer = await ask();
    assert.equal(answer.status, 200, answer.text);
    // The call without a function is not a search: it is the answer's, and the searches it came with are not run.
    const message = ((answer.json.choices as Json[])[0] as Json).message as Json;
    assert.deepEqual(message.tool_calls, [{ type: 'function' }]);

    calls = [
      { id: 'call_2', type: 'function', function: { name: 'file_search', arguments: null } },
      { function: { name: 'file_search', arguments: '{"queries":["rome"]}' } },
    ];
    const before = requests.length;
    const searched = await ask();
    assert.equal(searched.status, 200, searched.text);
    assert.deepEqual(
      requests
        .slice(before)
        .map((r) => r.queries)
        .filter((queries) => queries.length > 0), // not the check of the stores before the first turn
      [['rome']],
      'null arguments: no query, no search call; the call without an id searched',
    );
    const next = bodies.at(-1)?.messages as Json[];
    assert.deepEqual(
      next.filter((m) => m.role === 'tool').map((m) => m.tool_call_id),
      ['call_2', 'call_file_search_1'],
    );
  });
});
