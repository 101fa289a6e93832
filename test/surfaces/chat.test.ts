import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { request } from 'undici';
import { MOCK_CONTENT, MOCK_TOOL_ARGUMENTS } from '../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, CHAT_PATH, authHeaders, chatBody, useGateway } from '../helpers/gateway.js';
import { call, fieldsOf } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';

const UPSTREAM_KEY = 'sk-configured-upstream-key-1234567890';

describe('chat route, non-streamed', () => {
  const fixture = useGateway({
    env: { UPSTREAM_API_KEY: UPSTREAM_KEY, BODY_LIMIT_BYTES: '4096' },
  });

  test('forwards the body byte for byte (unknown fields too) and answers the upstream chat.completion as is', async () => {
    const body = {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello?' },
      ],
      temperature: 0.2,
      top_p: 0.9,
      max_tokens: 64,
      seed: 7,
      response_format: { type: 'json_object' },
    };
    const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify(body),
    });
    assert.equal(answer.status, 200);
    assert.match(String(answer.headers['content-type']), /^application\/json/);
    assert.equal(answer.json.object, 'chat.completion');
    const choices = answer.json.choices as Array<{ message: { content: string } }>;
    assert.equal(choices[0]?.message.content, MOCK_CONTENT);

    const [received] = fixture.mock.chatRequests();
    assert.ok(received);
    assert.equal(received.method, 'POST');
    assert.equal(received.path, '/v1/chat/completions');
    assert.equal(received.body, JSON.stringify(body), 'the exact bytes the caller sent');
    assert.equal(received.headers.authorization, `Bearer ${UPSTREAM_KEY}`);
    assert.equal(received.headers['content-type'], 'application/json');
    assert.equal(received.headers['x-request-id'], answer.headers['x-request-id']);
  });

  test('the upstream answer reaches the caller byte for byte', async () => {
    const exact =
      '{"id":"chatcmpl-x", "object":"chat.completion",  "created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"caf\u00e9 ☕"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}';
    fixture.mock.enqueue({ kind: 'json', body: exact });
    const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody(),
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.text, exact);
  });

  test('the admin token, X-Upstream-Key and hop-by-hop headers never reach the upstream', async () => {
    const payload = chatBody();
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        `${fixture.gw.url}${CHAT_PATH}`,
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${ADMIN_TOKEN}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
            connection: 'keep-alive, x-secret-hop',
            'keep-alive': 'timeout=5',
            te: 'trailers',
            'proxy-authorization': 'Basic dXNlcjpwYXNz',
            'x-secret-hop': 'hop',
            'x-upstream-key': 'sk-caller-override-key-99999999',
            cookie: 'session=abc',
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
    assert.equal(status, 200);
    const [received] = fixture.mock.chatRequests();
    assert.ok(received);
    const names = Object.keys(received.headers);
    for (const forbidden of ['proxy-authorization', 'x-secret-hop', 'te', 'keep-alive', 'x-upstream-key', 'cookie']) {
      assert.ok(!names.includes(forbidden), `${forbidden} must not be forwarded`);
    }
    assert.equal(received.headers.authorization, 'Bearer sk-caller-override-key-99999999');
    assert.ok(!received.rawHeaders.join('\n').includes(ADMIN_TOKEN));
  });

  test('X-Upstream-Key replaces the configured key for that request only', async () => {
    await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders({ 'x-upstream-key': 'sk-override-for-one-call-123' }),
      body: chatBody(),
    });
    await call(`${fixture.gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    const [first, second] = fixture.mock.chatRequests();
    assert.equal(first?.headers.authorization, 'Bearer sk-override-for-one-call-123');
    assert.equal(second?.headers.authorization, `Bearer ${UPSTREAM_KEY}`);
  });

  test('an X-Upstream-Key with spaces or control characters is a 400 that does not echo it', async () => {
    const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders({ 'x-upstream-key': 'sk-has space-secretvalue' }),
      body: chatBody(),
    });
    assert.equal(answer.status, 400);
    assert.equal(answer.json.code, 'invalid_header');
    assert.equal(answer.json.details?.header, 'x-upstream-key');
    assert.ok(!answer.text.includes('secretvalue'));
    assert.equal(fixture.mock.chatRequests().length, 0);
  });

  test('function calling round-trips: tools out, tool_calls back, tool results forwarded', async () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather',
          parameters: { type: 'object', properties: { location: { type: 'string' } } },
        },
      },
    ];
    const first = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ tools, tool_choice: 'auto' }),
    });
    assert.equal(first.status, 200);
    const message = (
      first.json.choices as Array<{
        message: { tool_calls: Array<{ id: string; function: { name: string; arguments: string } }> };
        finish_reason: string;
      }>
    )[0];
    assert.equal(message?.finish_reason, 'tool_calls');
    const toolCall = message?.message.tool_calls[0];
    assert.equal(toolCall?.function.name, 'get_weather');
    assert.equal(toolCall?.function.arguments, MOCK_TOOL_ARGUMENTS);

    const followUp = {
      model: 'gpt-4o-mini',
      tools,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: toolCall?.id, type: 'function', function: toolCall?.function }],
        },
        { role: 'tool', tool_call_id: toolCall?.id, content: '{"temp_c":21}' },
      ],
    };
    const second = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify(followUp),
    });
    assert.equal(second.status, 200);
    assert.equal(fixture.mock.chatRequests()[1]?.body, JSON.stringify(followUp));
  });

  describe('bad input gets a 400 naming each bad field', () => {
    const cases: Array<{ name: string; body: unknown; fields: string[] }> = [
      { name: 'no messages', body: { model: 'm' }, fields: ['messages'] },
      { name: 'no model', body: { messages: [{ role: 'user', content: 'x' }] }, fields: ['model'] },
      { name: 'empty messages', body: { model: 'm', messages: [] }, fields: ['messages'] },
      {
        name: 'unknown role',
        body: { model: 'm', messages: [{ role: 'wizard', content: 'x' }] },
        fields: ['messages[0].role'],
      },
      {
        name: 'several at once',
        body: {
          model: 'm',
          messages: [{ role: 'user', content: 5 }],
          temperature: 'hot',
          max_tokens: 0,
          top_p: 3,
          stream: 'yes',
        },
        fields: ['messages[0].content', 'temperature', 'max_tokens', 'top_p', 'stream'],
      },
      {
        name: 'user without content',
        body: { model: 'm', messages: [{ role: 'user' }] },
        fields: ['messages[0].content'],
      },
      {
        name: 'tool message without tool_call_id',
        body: {
          model: 'm',
          messages: [
            { role: 'user', content: 'x' },
            { role: 'tool', content: 'r' },
          ],
        },
        fields: ['messages[1].tool_call_id'],
      },
      {
        name: 'tool result for a call never made',
        body: {
          model: 'm',
          messages: [
            { role: 'user', content: 'x' },
            { role: 'tool', tool_call_id: 'call_9', content: 'r' },
          ],
        },
        fields: ['messages[1].tool_call_id'],
      },
      {
        name: 'assistant with neither content nor tool_calls',
        body: { model: 'm', messages: [{ role: 'assistant' }] },
        fields: ['messages[0].content'],
      },
      {
        name: 'tool with a bad function name',
        body: {
          model: 'm',
          messages: [{ role: 'user', content: 'x' }],
          tools: [{ type: 'function', function: { name: 'bad name!' } }],
        },
        fields: ['tools[0].function.name'],
      },
      {
        name: 'bad tool_choice',
        body: { model: 'm', messages: [{ role: 'user', content: 'x' }], tool_choice: 'always' },
        fields: ['tool_choice'],
      },
      { name: 'a JSON array', body: [1, 2], fields: ['body'] },
    ];
    for (const c of cases) {
      test(c.name, async () => {
        const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: authHeaders(),
          body: JSON.stringify(c.body),
        });
        assert.equal(answer.status, 400, answer.text);
        assert.equal(answer.json.code, 'validation_failed');
        assert.deepEqual(fieldsOf(answer).sort(), [...c.fields].sort());
        assert.equal(fixture.mock.chatRequests().length, 0, 'nothing reaches the upstream');
      });
    }
  });

  test('malformed JSON is a 400 invalid_json saying where, without quoting the body', async () => {
    const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: '{"model":"m",\n "messages": [ sk-secret-in-body-123456 ]}',
    });
    assert.equal(answer.status, 400);
    assert.equal(answer.json.code, 'invalid_json');
    assert.equal(answer.json.details?.line, 2);
    assert.equal(typeof answer.json.details?.position, 'number');
    assert.ok(!answer.text.includes('sk-secret-in-body'));
  });

  test('an empty body is a 400 invalid_json', async () => {
    const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: '' });
    assert.equal(answer.status, 400);
    assert.equal(answer.json.code, 'invalid_json');
  });

  test('a non-JSON content type is a 415', async () => {
    const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders({ 'content-type': 'text/plain' }),
      body: chatBody(),
    });
    assert.equal(answer.status, 415);
    assert.equal(answer.json.code, 'unsupported_media_type');
    assert.deepEqual(answer.json.details?.accepted, ['application/json']);
  });

  test('a body over the configured limit is a 413 naming the limit', async () => {
    const big = chatBody({ messages: [{ role: 'user', content: 'x'.repeat(5000) }] });
    const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: big });
    assert.equal(answer.status, 413);
    assert.equal(answer.json.code, 'payload_too_large');
    assert.equal(answer.json.details?.limit_bytes, 4096);
  });

  test('a charset parameter and the vendor +json media type are accepted', async () => {
    for (const type of ['application/json; charset=utf-8', 'application/vnd.llmgw.v1+json']) {
      const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: authHeaders({ 'content-type': type }),
        body: chatBody(),
      });
      assert.equal(answer.status, 200, type);
    }
  });

  test('the client leaving cancels the upstream call', async () => {
    fixture.mock.enqueue({ kind: 'hang' });
    const aborter = new AbortController();
    const pending = request(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody(),
      signal: aborter.signal,
    });
    while (fixture.mock.chatRequests().length === 0) await new Promise((r) => setTimeout(r, 5));
    aborter.abort();
    await assert.rejects(pending);
    const received = fixture.mock.chatRequests()[0];
    assert.ok(received);
    assert.equal(await withTimeout(received.aborted, 2000), true, 'the upstream saw the call cancelled');
    await waitFor(
      'the access line of the call the caller left',
      () => fixture.gw.logLines.some((l) => l.includes('"code":"client_closed_request"')),
      2000,
    ).catch((e: unknown) => {
      console.log(fixture.gw.logLines.slice(-3));
      throw e;
    });
  });
});

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  return Promise.race([promise, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms).unref())]);
}
