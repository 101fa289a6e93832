/**
 * Issue 29: an answer passed through without being streamed (a natively forwarded Responses or Messages answer, an
 * embeddings list) never carries the provider key, the configured one or the caller's X-Upstream-Key, whole or in
 * part, as streamed events never do. Real sockets: the mock upstream echoes the key it was sent into its JSON.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { ADMIN_TOKEN, authHeaders, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import type { Behavior } from '../helpers/upstreams/openai.js';
import { scrubAnswer } from '../../src/secrets/key-scrubber.js';

const UPSTREAM_KEY = 'sk-scrub-upstream-key-0123456789abcdefXYZ';
const OWN_KEY = 'sk-callers-own-provider-key-9876543210zyxw';

const keyOf = (req: IncomingMessage) => String(req.headers.authorization ?? '').replace(/^Bearer /, '');

/** Every way the key may leak: whole, or a run of 20 of its characters. */
function assertNoKey(text: string, key: string): void {
  assert.ok(!text.includes(key), `the key itself: ${text.slice(0, 400)}`);
  assert.ok(!text.includes(key.slice(5, 25)), `a piece of it: ${text.slice(0, 400)}`);
}

/** A Responses answer whose text repeats the key it was sent, and whose metadata holds a piece of it. */
const echoingResponse: Behavior = {
  kind: 'raw',
  handler: (req, res) => {
    const key = keyOf(req);
    const message = {
      type: 'message',
      id: 'msg_echo',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: `your key is ${key}.`, annotations: [] }],
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'resp_echo',
        object: 'response',
        status: 'completed',
        model: 'gpt-4o-mini',
        metadata: { piece: key.slice(5, 25) },
        output: [message],
        usage: { input_tokens: 3, output_tokens: 4, total_tokens: 7 },
      }),
    );
  },
};

describe('non-streamed native answers are scrubbed of the provider key', () => {
  const fixture = useGateway({ env: { UPSTREAM_API_KEY: UPSTREAM_KEY, UPSTREAM_KIND: 'openai' } });

  test("a Responses answer forwarded natively: the configured key and the caller's X-Upstream-Key, whole or a piece", async () => {
    for (const [headers, key] of [
      [authHeaders(), UPSTREAM_KEY],
      [authHeaders({ 'x-upstream-key': OWN_KEY }), OWN_KEY],
    ] as const) {
      fixture.mock.enqueue(echoingResponse);
      const answer = await call(fixture.url('/v1/responses'), {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: 'gpt-4o-mini', input: 'x', tools: [{ type: 'web_search' }] }),
      });
      assert.equal(answer.status, 200);
      assert.equal(
        fixture.mock.requests.at(-1)?.headers.authorization,
        `Bearer ${key}`,
        'the key the upstream was sent',
      );
      assertNoKey(answer.text, key);
      const response = answer.json as {
        object?: string;
        output?: Array<{ content: Array<{ text: string }> }>;
        usage?: { input_tokens: number };
      };
      assert.equal(response.object, 'response', 'still the JSON answer, in its own shape');
      assert.equal(response.output?.[0]?.content[0]?.text, 'your key is [REDACTED].');
      assert.equal(response.usage?.input_tokens, 3);
    }
  });

  test('an embeddings list passed through: the key in its model field', async () => {
    fixture.mock.enqueue({
      kind: 'raw',
      handler: (req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'list',
            data: [{ object: 'embedding', index: 0, embedding: [0.5, 0.25] }],
            model: keyOf(req),
            usage: { prompt_tokens: 2, total_tokens: 2 },
          }),
        );
      },
    });
    const answer = await call(fixture.url('/v1/embeddings'), {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'text-embedding-3-small', input: 'x' }),
    });
    assert.equal(answer.status, 200);
    assertNoKey(answer.text, UPSTREAM_KEY);
    assert.equal((answer.json as { model?: string }).model, '[REDACTED]');
    assert.deepEqual((answer.json as { data?: Array<{ embedding: number[] }> }).data?.[0]?.embedding, [0.5, 0.25]);
  });
});

describe('a Messages answer forwarded natively to Anthropic is scrubbed of the key', () => {
  const KEY = 'sk-ant-scrub-key-0123456789abcdefghij';
  const fixture = useGateway({
    upstream: 'anthropic',
    key: KEY,
    models: ['- { id: claude, upstream: claude, upstream_model: claude-sonnet-4-5 }'],
  });

  test('the key in the message text is gone; the rest of the answer is as Anthropic wrote it', async () => {
    fixture.mock.enqueue({ kind: 'message', text: `I was called with ${KEY} and ${KEY.slice(3, 30)}` });
    const answer = await call(`${fixture.gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': ADMIN_TOKEN, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude', max_tokens: 16, messages: [{ role: 'user', content: 'echo' }] }),
    });
    assert.equal(answer.status, 200);
    assertNoKey(answer.text, KEY);
    const message = answer.json as {
      type?: string;
      content?: Array<{ text: string }>;
      usage?: { input_tokens: number };
    };
    assert.equal(message.type, 'message');
    assert.equal(message.content?.[0]?.text, 'I was called with [REDACTED] and [REDACTED]');
    assert.equal(message.usage?.input_tokens, 2095);
  });
});

describe('scrubAnswer: searched without a parse, rewritten only when a key occurs', () => {
  test('no key: the very same bytes; a whole key or any run of 15 of its characters, wherever it starts: scrubbed', () => {
    const clean = Buffer.from('{"text":"nothing secret here, sk- and proj are words"}');
    assert.equal(scrubAnswer(clean, clean.toString(), [UPSTREAM_KEY, undefined, OWN_KEY]), clean, 'not copied');
    for (let start = 0; start + 15 <= UPSTREAM_KEY.length; start++) {
      const text = `{"text":"x${UPSTREAM_KEY.slice(start, start + 15)}y"}`;
      const scrubbed = scrubAnswer(Buffer.from(text), text, [OWN_KEY, UPSTREAM_KEY]).toString();
      assert.ok(!scrubbed.includes(UPSTREAM_KEY.slice(start, start + 15)), `from ${start}: ${scrubbed}`);
      assert.doesNotThrow(() => JSON.parse(scrubbed));
    }
  });
});
