/**
 * The `file_search` tool from the clients' own helpers, the gateway running it on a translated upstream: the AI SDK
 * (`openai.tools.fileSearch`, its strict zod schemas of the Responses API) and the OpenAI Agents SDK
 * (`fileSearchTool`). Each reads the search and the answer without a schema failure.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { ADMIN_TOKEN } from '../helpers/gateway.js';
import {
  CITED_TEXT,
  MODELS,
  OUR_STORE,
  SEARCH_QUERY,
  searchThenCite,
  useFileSearchGateway,
} from '../helpers/file-search-fixture.js';

describe('file_search through the clients’ own tool helpers', () => {
  const fx = useFileSearchGateway();
  const provider = () => createOpenAI({ baseURL: `${fx.gw.url}/v1`, apiKey: ADMIN_TOKEN });

  test('AI SDK generateText: the provider-executed search with its results, the text without markers', async () => {
    fx.upstream.setDecide(searchThenCite);
    const openai = provider();
    const result = await generateText({
      model: openai.responses(MODELS.gemini),
      prompt: 'What is the capital of France?',
      tools: { file_search: openai.tools.fileSearch({ vectorStoreIds: [OUR_STORE] }) },
      providerOptions: { openai: { include: ['file_search_call.results'], store: false } },
    });
    assert.equal(result.text, CITED_TEXT);
    const toolResult = result.steps[0]?.content.find((part) => part.type === 'tool-result');
    assert.equal(toolResult?.toolName, 'file_search');
    const output = (toolResult as { output?: { queries?: unknown; results?: Array<{ fileId?: unknown }> } }).output;
    assert.deepEqual(output?.queries, [SEARCH_QUERY]);
    assert.equal(output?.results?.[0]?.fileId, 'file-paris');
  });

  test('AI SDK streamText: the stream parses to the end with the same text', async () => {
    fx.upstream.setDecide(searchThenCite);
    const openai = provider();
    const result = streamText({
      model: openai.responses(MODELS.anthropic),
      prompt: 'What is the capital of France?',
      tools: { file_search: openai.tools.fileSearch({ vectorStoreIds: [OUR_STORE] }) },
      providerOptions: { openai: { store: false } },
    });
    const parts: string[] = [];
    for await (const part of result.fullStream) {
      assert.notEqual(part.type, 'error', JSON.stringify(part));
      parts.push(part.type);
    }
    assert.equal(await result.text, CITED_TEXT);
    assert.ok(parts.includes('tool-call') && parts.includes('tool-result'), parts.join(','));
  });

  test('OpenAI Agents SDK: run(agent) with fileSearchTool answers with the cited text', async () => {
    fx.upstream.setDecide(searchThenCite);
    const agents = await import('@openai/agents');
    agents.setDefaultOpenAIClient(new OpenAI({ baseURL: `${fx.gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 }));
    agents.setTracingDisabled(true);
    const agent = new agents.Agent({
      name: 'Files agent',
      instructions: 'Answer from the files.',
      model: MODELS.chat,
      tools: [agents.fileSearchTool([OUR_STORE], { includeSearchResults: true })],
    });
    const result = await agents.run(agent, 'What is the capital of France?');
    assert.equal(String(result.finalOutput), CITED_TEXT);
    const search = result.newItems.find((item) => item.type === 'tool_call_item');
    assert.ok(search, 'the search is one of the run’s items');
  });
});
