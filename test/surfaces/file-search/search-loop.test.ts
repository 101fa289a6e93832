/**
 * `vector_stores.max_tool_searches` bounds the searches of one `file_search` answer (it was read from the config and
 * never used: every answer ran four). The real gateway, a real vector store, a model that never stops searching.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { searchForever } from '../../helpers/file-search-fixture.js';
import { startScriptedUpstream, type ScriptedUpstream } from '../../helpers/upstreams/scripted.js';
import { startWordEmbedder, type WordEmbedder } from '../../helpers/upstreams/word-embedder.js';

type Json = Record<string, unknown>;

describe('vector_stores.max_tool_searches', () => {
  let embedder: WordEmbedder;
  let upstream: ScriptedUpstream;
  let gw: TestGateway;
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };

  before(async () => {
    embedder = await startWordEmbedder({ dimensions: 16 });
    upstream = await startScriptedUpstream(searchForever);
    gw = await startGateway({
      env: { FS_UPSTREAM_KEY: 'sk-file-search-0123456789' },
      configFile: {
        name: 'max-searches.yaml',
        text: [
          'upstreams:',
          `  - { name: compat, kind: openai-compatible, base_url: "${upstream.origin}/v1", api_key_env: FS_UPSTREAM_KEY }`,
          `  - { name: embed, kind: openai-compatible, base_url: "${embedder.baseUrl}", api_key_env: FS_UPSTREAM_KEY }`,
          'models:',
          '  - { id: chat-model, upstream: compat, upstream_model: m-chat }',
          '  - { id: text-embedding-3-small, upstream: embed, upstream_model: text-embedding-3-small }',
          'vector_stores:',
          '  max_tool_searches: 2',
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw.close();
    await upstream.close();
    await embedder.close();
  });

  test('an answer runs at most that many searches, then the model is made to answer', async () => {
    const created = await call(`${gw.url}/v1/vector_stores`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'searched' }),
    });
    assert.equal(created.status, 200, created.text);
    const seen = upstream.modelCalls().length;
    const answer = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        model: 'chat-model',
        messages: [{ role: 'user', content: 'search on' }],
        tools: [{ type: 'file_search', vector_store_ids: [created.json.id] }],
      }),
    });
    assert.equal(answer.status, 200, answer.text);
    const message = ((answer.json.choices as Json[])[0] as Json).message as Json;
    assert.equal((message.file_search_results as unknown[]).length, 2);
    const turns = upstream.modelCalls().slice(seen);
    assert.equal(turns.length, 3, 'two search turns, then the answer');
    assert.equal(turns[2]?.body?.tool_choice, 'none');
  });
});
