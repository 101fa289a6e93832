/**
 * Retrieval end to end (issue 44's "Done means"), every part real: documents uploaded to a vector store through the
 * `openai` SDK (one a PDF), ingested by the gateway (parsed, chunked, embedded through its own embeddings route by a
 * word-embedding mock on a socket), searched with a filter, then the `file_search` tool on models served by an
 * OpenAI-compatible chat upstream, Anthropic and Gemini (a scripted upstream that calls the offered function and
 * cites the passage of the file it is asked about, as a model reads its tool result), through the `openai` SDK,
 * `@openai/agents` and the AI SDK, and a chat completion. The answer cites the right file.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';
import { generateText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../helpers/gateway.js';
import { buildPdf } from '../helpers/document-fixtures.js';
import { SCRIPT, startScriptedUpstream, type Decide, type ScriptedUpstream } from '../helpers/upstreams/scripted.js';
import { startWordEmbedder, type WordEmbedder } from '../helpers/upstreams/word-embedder.js';

const MODELS = { chat: 'chat-model', anthropic: 'claude-model', gemini: 'gemini-model' } as const;
const QUESTION = 'How long is the appliance warranty?';

/**
 * A model that searches for the warranty, then answers citing the passage the tool result numbered for
 * warranty.pdf (`[n] (file: warranty.pdf)`), as a model reads its tool result; it cites [1] when none is.
 */
const searchThenCiteWarranty: Decide = (api, body) => {
  const seen = JSON.stringify(body);
  if (!seen.includes('Passages found for')) {
    return {
      type: 'tool_call',
      id: SCRIPT.toolCallIds[api],
      name: 'file_search',
      arguments: JSON.stringify({ queries: ['warranty appliance years'] }),
    };
  }
  const n = /\[(\d+)\] \(file: warranty\.pdf\)/.exec(seen)?.[1] ?? '1';
  return { type: 'text', text: `The appliance is covered for two years [${n}].` };
};
const CITED = 'The appliance is covered for two years.';

describe('retrieval end to end: vector store, search, file_search on every upstream kind', () => {
  let embedder: WordEmbedder;
  let upstream: ScriptedUpstream;
  let gw: TestGateway;
  let client: OpenAI;
  let storeId = '';
  let pdfId = '';

  before(async () => {
    embedder = await startWordEmbedder({ dimensions: 256 });
    upstream = await startScriptedUpstream(searchThenCiteWarranty);
    const origin = upstream.origin;
    gw = await startGateway({
      env: { E2E_KEY: 'sk-retrieval-e2e-0123456789' },
      configFile: {
        name: 'retrieval.yaml',
        text: [
          'upstreams:',
          `  - { name: embedder, kind: openai-compatible, base_url: "${embedder.baseUrl}", api_key_env: E2E_KEY }`,
          `  - { name: compat, kind: openai-compatible, base_url: "${origin}/v1", api_key_env: E2E_KEY }`,
          `  - { name: claude, kind: anthropic, base_url: "${origin}/v1", api_key_env: E2E_KEY }`,
          `  - { name: google, kind: gemini, base_url: "${origin}/v1beta", api_key_env: E2E_KEY }`,
          'models:',
          '  - { id: text-embedding-3-small, upstream: embedder, upstream_model: text-embedding-3-small }',
          `  - { id: ${MODELS.chat}, upstream: compat, upstream_model: m-chat }`,
          `  - { id: ${MODELS.anthropic}, upstream: claude, upstream_model: claude-haiku-4-5 }`,
          `  - { id: ${MODELS.gemini}, upstream: google, upstream_model: gemini-2.0-flash }`,
        ].join('\n'),
      },
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });

    const store = await client.vectorStores.create({ name: 'support handbook' });
    storeId = store.id;
    const files = await Promise.all([
      toFile(Buffer.from('Refunds are paid back to the card within thirty days of purchase.'), 'refunds.md'),
      toFile(Buffer.from('Shipping takes five business days from the warehouse.'), 'shipping.txt'),
      toFile(
        buildPdf([['Warranty covers the appliance for two years.'], ['Spare parts ship separately.']]),
        'warranty.pdf',
      ),
    ]);
    const batch = await client.vectorStores.fileBatches.uploadAndPoll(storeId, { files });
    assert.equal(batch.status, 'completed');
    assert.equal(batch.file_counts.completed, 3);
    pdfId = (await client.files.list()).data.find((f) => f.filename === 'warranty.pdf')!.id;
    await client.vectorStores.files.update(pdfId, { vector_store_id: storeId, attributes: { topic: 'legal' } });
  });
  after(async () => {
    await gw.close();
    await upstream.close();
    await embedder.close();
  });

  test('vectorStores.search with a filter finds the PDF', async () => {
    const page = await client.vectorStores.search(storeId, {
      query: 'appliance warranty',
      filters: { type: 'eq', key: 'topic', value: 'legal' },
    });
    assert.deepEqual(
      page.data.map((r) => [r.file_id, r.filename]),
      [[pdfId, 'warranty.pdf']],
    );
    assert.match(page.data[0]!.content[0]!.text, /two years/);
  });

  for (const [kind, model] of Object.entries(MODELS)) {
    test(`responses.create with file_search on ${kind}: the answer cites warranty.pdf where the marker was`, async () => {
      const before = embedder.requests.length;
      const response = await client.responses.create({
        model,
        input: QUESTION,
        tools: [{ type: 'file_search', vector_store_ids: [storeId] }],
        include: ['file_search_call.results'],
      });
      const search = response.output.find((item) => item.type === 'file_search_call');
      assert.ok(search, JSON.stringify(response.output));
      assert.equal(search.status, 'completed');
      assert.deepEqual(search.queries, ['warranty appliance years']);
      assert.equal(search.results?.[0]?.file_id, pdfId);
      assert.equal(search.results?.[0]?.filename, 'warranty.pdf');
      assert.deepEqual(search.results?.[0]?.attributes, { topic: 'legal' });
      const message = response.output.find((item) => item.type === 'message');
      const text = message?.type === 'message' ? message.content[0] : undefined;
      assert.ok(text?.type === 'output_text');
      assert.equal(text.text, CITED);
      assert.deepEqual(text.annotations, [
        { type: 'file_citation', file_id: pdfId, filename: 'warranty.pdf', index: CITED.length - 1 },
      ]);
      // The search embedded its query with the store's model, through the gateway, as the caller.
      assert.deepEqual(
        embedder.requests.slice(before).map((r) => r.input),
        [['warranty appliance years']],
      );
    });
  }

  test('a chat completion with the tool: the citation as url_citation to the file, the results beside it', async () => {
    const completion = (await client.chat.completions.create({
      model: MODELS.anthropic,
      messages: [{ role: 'user', content: QUESTION }],
      tools: [{ type: 'file_search', vector_store_ids: [storeId] } as unknown as OpenAI.ChatCompletionTool],
    })) as OpenAI.ChatCompletion & {
      choices: { message: { file_search_results?: { results: { file_id: string }[] }[] } }[];
    };
    const message = completion.choices[0]!.message;
    assert.equal(message.content, CITED);
    const annotation = message.annotations?.[0];
    assert.equal(annotation?.type, 'url_citation');
    assert.equal(annotation?.url_citation.title, 'warranty.pdf');
    assert.ok(annotation?.url_citation.url.endsWith(`/v1/files/${pdfId}/content`), annotation?.url_citation.url);
    assert.equal(annotation?.url_citation.end_index, CITED.length - 1);
    assert.equal(message.file_search_results?.[0]?.results[0]?.file_id, pdfId);
  });

  test('@openai/agents fileSearchTool on the Gemini model: the run answers with the cited text', async () => {
    const agents = await import('@openai/agents');
    agents.setDefaultOpenAIClient(new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 }));
    agents.setTracingDisabled(true);
    const agent = new agents.Agent({
      name: 'Support agent',
      instructions: 'Answer from the handbook.',
      model: MODELS.gemini,
      tools: [agents.fileSearchTool([storeId], { includeSearchResults: true })],
    });
    const result = await agents.run(agent, QUESTION);
    assert.equal(String(result.finalOutput), CITED);
    const call = result.newItems.find((item) => item.type === 'tool_call_item');
    assert.ok(call, 'the search is one of the run’s items');
    assert.match(JSON.stringify(call.rawItem), new RegExp(pdfId));
  });

  test('the AI SDK openai.tools.fileSearch on the chat model: the search result names the PDF', async () => {
    const openai = createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN });
    const result = await generateText({
      model: openai.responses(MODELS.chat),
      prompt: QUESTION,
      tools: { file_search: openai.tools.fileSearch({ vectorStoreIds: [storeId] }) },
      providerOptions: { openai: { include: ['file_search_call.results'], store: false } },
    });
    assert.equal(result.text, CITED);
    const toolResult = result.steps[0]?.content.find((part) => part.type === 'tool-result');
    const output = (toolResult as { output?: { results?: Array<{ fileId?: string; filename?: string }> } }).output;
    assert.equal(output?.results?.[0]?.fileId, pdfId);
    assert.equal(output?.results?.[0]?.filename, 'warranty.pdf');
  });
});
