// The shape of a new test, as docs/architecture.md ("Tests") shows it: a mock upstream of one wire format and the
// gateway in front of it in a few lines, then assertions on what the caller got and what the upstream received.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { authHeaders, CHAT_PATH, chatBody, useGateway } from '../helpers/gateway.js';

describe('a chat call to an Anthropic upstream', () => {
  const fx = useGateway({
    upstream: 'anthropic',
    key: 'sk-ant-example-0123456789',
    models: ['- { id: claude-fast, upstream: claude, upstream_model: claude-3-5-haiku-latest }'],
  });

  test('is answered in chat form and reaches the upstream in its own', async () => {
    fx.mock.enqueue({ kind: 'message', text: 'Ahoy' });
    const res = await fetch(fx.url(CHAT_PATH), {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'claude-fast' }),
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    assert.equal(body.choices[0]?.message.content, 'Ahoy');
    const [sent] = fx.mock.messageRequests();
    assert.equal(sent?.headers['x-api-key'], 'sk-ant-example-0123456789');
    assert.equal(sent?.body?.model, 'claude-3-5-haiku-latest');
  });
});
