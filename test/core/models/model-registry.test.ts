import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CHAT_PATH, authHeaders, chatBody, useGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { readStream } from '../../helpers/sse-client.js';
import { waitForValue } from '../../helpers/wait.js';

describe('model registry: aliases, prices, cost', () => {
  const fixture = useGateway({
    configFile: {
      name: 'registry.yaml',
      text: 'models:\n  - { id: cheap, upstream: default, upstream_model: gpt-4o-mini, aliases: [cheap-latest], pricing: { input_per_million: 0.15, output_per_million: 0.6 } }\n',
    },
  });

  const accessLines = () =>
    fixture.gw.logLines
      .map(
        (l) =>
          JSON.parse(l) as {
            msg?: string;
            route?: string;
            model?: string;
            prompt_tokens?: number;
            completion_tokens?: number;
            cost_usd?: number;
          },
      )
      .filter((l) => l.msg === 'request' && l.route === 'chat');

  test('an alias routes like the model; the access line carries the usage and its cost', async () => {
    const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'cheap-latest' }),
    });
    assert.equal(answer.status, 200, answer.text);
    assert.equal((fixture.mock.chatRequests().at(-1)?.json as { model?: string }).model, 'gpt-4o-mini');
    const usage = answer.json.usage as { prompt_tokens: number; completion_tokens: number };
    const line = await waitForValue(
      'the access line of the call',
      () => accessLines().find((l) => (l as { request_id?: string }).request_id === answer.headers['x-request-id']),
      (l) => l !== undefined,
    );
    assert.equal(line?.model, 'cheap-latest');
    const expected = Math.round(((usage.prompt_tokens * 0.15 + usage.completion_tokens * 0.6) / 1e6) * 1e8) / 1e8;
    assert.equal(line?.cost_usd, expected);
    assert.ok(expected > 0);
  });

  test('a stream with usage (include_usage) is priced too', async () => {
    fixture.mock.enqueue({ kind: 'stream' });
    const answer = await readStream(
      `${fixture.gw.url}${CHAT_PATH}`,
      chatBody({ model: 'cheap', stream: true, stream_options: { include_usage: true } }),
      authHeaders(),
    );
    assert.ok(answer.text.endsWith('data: [DONE]\n\n'));
    const line = await waitForValue(
      'the access line of the stream',
      () => accessLines().at(-1),
      (l) => l?.model === 'cheap' && l.cost_usd !== undefined,
    );
    assert.ok(typeof line?.cost_usd === 'number' && (line.prompt_tokens ?? 0) > 0, JSON.stringify(line));
  });

  test('the models route lists aliases and prices', async () => {
    const models = await call(`${fixture.gw.url}/v1/?route=models`, { headers: authHeaders() });
    const cheap = (models.json.data as Array<{ id: string; aliases?: string[]; pricing?: unknown }>).find(
      (m) => m.id === 'cheap',
    );
    assert.deepEqual(cheap?.aliases, ['cheap-latest']);
    assert.deepEqual(cheap?.pricing, {
      input_per_million_tokens: 0.15,
      output_per_million_tokens: 0.6,
      currency: 'USD',
      source: 'config',
    });
  });
});
