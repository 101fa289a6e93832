import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatOpenAI } from '@langchain/openai';
import { MOCK_CONTENT } from '../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, useGateway } from '../helpers/gateway.js';

describe('LangChain (@langchain/openai ChatOpenAI) against the gateway, base URL and key changed only', () => {
  const fixture = useGateway({ env: { UPSTREAM_API_KEY: 'sk-langchain-upstream-key-0123456789' } });
  const model = (useResponsesApi: boolean) =>
    new ChatOpenAI({
      model: 'gpt-4o-mini',
      apiKey: ADMIN_TOKEN,
      configuration: { baseURL: `${fixture.gw.url}/v1` },
      maxRetries: 0,
      useResponsesApi,
    });

  test('chat completions: invoke and stream', async () => {
    const answer = await model(false).invoke('Hello');
    assert.equal(answer.content, MOCK_CONTENT);
    fixture.mock.enqueue({ kind: 'stream', content: ['Lang', 'Chain'] });
    let text = '';
    for await (const chunk of await model(false).stream('Hello'))
      text += typeof chunk.content === 'string' ? chunk.content : '';
    assert.equal(text, 'LangChain');
    assert.equal(fixture.mock.chatRequests().length, 2);
  });

  test('the Responses API (useResponsesApi): invoke and stream, translated to chat upstream', async () => {
    const answer = await model(true).invoke('Hello');
    assert.equal(answer.text, MOCK_CONTENT);
    fixture.mock.enqueue({ kind: 'stream', content: ['Re', 'sponses'] });
    let text = '';
    for await (const chunk of await model(true).stream('Hello')) text += chunk.text;
    assert.equal(text, 'Responses');
    assert.ok(fixture.gw.logLines.some((l) => l.includes('"url":"/v1/responses"') && l.includes('"status":200')));
  });
});
