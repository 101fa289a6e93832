/**
 * The Anthropic SDK's own tool loop, `client.beta.messages.toolRunner(...)`, through the gateway on every upstream
 * kind. The runner asks for a message thread on its first turn (`anthropic-beta: message-threads-2026-08-12`,
 * `thread: {type: "create"}`) and falls back to sending the whole conversation when the answer is Anthropic's
 * `thread_unsupported_request` (status 400, `error.details.error_code`). A translated model refuses the thread in
 * exactly that shape (docs/messages.md, "Message threads"); an Anthropic upstream gets the request as it is, and its
 * own answer — a thread held, or its refusal — comes back with what the SDK reads. Real SDK, real sockets, one
 * scripted upstream speaking each provider's wire format (test/helpers/upstreams/scripted.ts).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { agentLoop, SCRIPT, startScriptedUpstream, type ScriptedUpstream } from '../helpers/upstreams/scripted.js';
import { messageIdOf } from '../helpers/upstreams/scripted.js';
import { scopedKey } from '../helpers/scoped-key.js';

const PROMPT = 'What is the weather in Paris? Use the get_weather tool.';
const TOOL_RESULT = '{"location":"Paris","temperature_c":21,"conditions":"sunny"}';
const THREADS_BETA = 'message-threads-2026-08-12';
const UPSTREAM_KEY = 'sk-runner-upstream-0123456789';
const SCHEMA = {
  type: 'object',
  properties: { location: { type: 'string', description: 'The city' } },
  required: ['location'],
  additionalProperties: false,
} as const;

type Json = Record<string, unknown>;

/** What the SDK sent the gateway: each request's `anthropic-beta` header and body. */
interface Sent {
  beta: string | null;
  body: Json;
}

/**
 * Runs the SDK's tool runner to its end against `gw` (each turn streamed with `stream`); what it sent, what the tool
 * was called with, the final text.
 */
async function runTools(gw: TestGateway, stream = false): Promise<{ sent: Sent[]; ran: unknown[]; text: string }> {
  const sent: Sent[] = [];
  const client = new Anthropic({
    baseURL: gw.url,
    apiKey: ADMIN_TOKEN,
    maxRetries: 0,
    fetch: async (input, init) => {
      const headers = new Headers(init?.headers);
      sent.push({ beta: headers.get('anthropic-beta'), body: JSON.parse(String(init?.body)) as Json });
      return fetch(input, init);
    },
  });
  const ran: unknown[] = [];
  const weather = betaTool({
    name: 'get_weather',
    description: 'The weather now in a city.',
    inputSchema: SCHEMA,
    run: (args) => {
      ran.push(args);
      return TOOL_RESULT;
    },
  });
  const final = await client.beta.messages
    .toolRunner({
      model: 'claude-sonnet-5',
      max_tokens: 256,
      messages: [{ role: 'user', content: PROMPT }],
      tools: [weather],
      stream,
    })
    .runUntilDone();
  const text = final.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
  return { sent, ran, text };
}

/** The conversation of a Messages request as role and block types, tool results with their text. */
function shapeOf(messages: unknown): unknown[] {
  return (messages as Array<{ role: string; content: unknown }>).map((m) => ({
    role: m.role,
    content:
      typeof m.content === 'string'
        ? m.content
        : (m.content as Json[]).map((b) => (b.type === 'tool_result' ? `tool_result:${String(b.content)}` : b.type)),
  }));
}

const FIRST_TURN = [{ role: 'user', content: PROMPT }];
const WHOLE_LOOP = [
  { role: 'user', content: PROMPT },
  { role: 'assistant', content: ['tool_use'] },
  { role: 'user', content: [`tool_result:${TOOL_RESULT}`] },
];

/** The SDK's requests: the thread it asked for first, then the whole conversation each turn, without a thread. */
function assertFellBack(sent: Sent[]): void {
  assert.deepEqual(
    sent.map((s) => ({ thread: s.body.thread, threadsBeta: s.beta?.includes(THREADS_BETA) ?? false })),
    [
      { thread: { type: 'create' }, threadsBeta: true },
      { thread: undefined, threadsBeta: false },
      { thread: undefined, threadsBeta: false },
    ],
    'a thread asked for, refused, then the whole conversation every turn',
  );
  assert.deepEqual(shapeOf(sent[2]?.body.messages), WHOLE_LOOP);
}

describe("the Anthropic SDK's tool runner (client.beta.messages.toolRunner) on every upstream kind", () => {
  let upstream: ScriptedUpstream;
  let holding: ScriptedUpstream;
  const gateways = new Map<string, TestGateway>();
  const gateway = (name: string): TestGateway => gateways.get(name) as TestGateway;

  before(async () => {
    upstream = await startScriptedUpstream();
    holding = await startScriptedUpstream(undefined, { threads: 'hold' });
    const kinds = {
      chat: ['openai-compatible', `${upstream.origin}/v1`],
      gemini: ['gemini', `${upstream.origin}/v1beta`],
      'anthropic-refusing': ['anthropic', `${upstream.origin}/v1`],
      'anthropic-holding': ['anthropic', `${holding.origin}/v1`],
    } as const;
    for (const [name, [kind, base]] of Object.entries(kinds)) {
      const text = [
        'upstreams:',
        '  - name: up',
        `    kind: ${kind}`,
        `    base_url: ${base}`,
        '    api_key_env: RUNNER_UPSTREAM_KEY',
        'default_upstream: up',
        'limits:',
        '  upstream_pause_max_seconds: 0',
      ].join('\n');
      gateways.set(
        name,
        await startGateway({
          env: { RUNNER_UPSTREAM_KEY: UPSTREAM_KEY },
          configFile: { name: 'runner.yaml', text },
        }),
      );
    }
  });
  after(async () => {
    await Promise.all([...gateways.values()].map((gw) => gw.close()));
    await upstream.close();
    await holding.close();
  });

  test("translated to an OpenAI-compatible upstream: the thread refused in the SDK's fallback shape, the loop finished with the whole history", async () => {
    const seen = upstream.modelCalls().length;
    const { sent, ran, text } = await runTools(gateway('chat'));
    assert.equal(text, SCRIPT.finalText);
    assert.deepEqual(ran, [{ location: 'Paris' }], 'the tool ran once, with the arguments the model gave');
    assertFellBack(sent);
    const calls = upstream.modelCalls().slice(seen);
    assert.deepEqual(
      calls.map((c) => c.api),
      ['chat', 'chat'],
      'the refused request never reached the upstream; each turn did, in chat',
    );
    const last = calls[1]?.body as { messages: Json[] };
    assert.deepEqual(
      last.messages.map((m) => m.role),
      ['user', 'assistant', 'tool'],
      'the whole conversation reached the upstream on the last turn',
    );
    assert.equal(last.messages[2]?.content, TOOL_RESULT);
    assert.equal(last.messages[2]?.tool_call_id, SCRIPT.toolCallIds.chat);
  });

  test('translated to a Gemini upstream: the same fallback, the tool result sent as a functionResponse', async () => {
    const seen = upstream.modelCalls().length;
    const { sent, ran, text } = await runTools(gateway('gemini'));
    assert.equal(text, SCRIPT.finalText);
    assert.deepEqual(ran, [{ location: 'Paris' }]);
    assertFellBack(sent);
    const calls = upstream.modelCalls().slice(seen);
    assert.deepEqual(
      calls.map((c) => c.api),
      ['gemini', 'gemini'],
    );
    const contents = (calls[1]?.body as { contents: Array<{ role: string; parts: Json[] }> }).contents;
    assert.deepEqual(
      contents.map((c) => [c.role, Object.keys(c.parts[0] ?? {})[0]]),
      [
        ['user', 'text'],
        ['model', 'functionCall'],
        ['user', 'functionResponse'],
      ],
    );
    assert.match(JSON.stringify(contents[2]?.parts[0]), /temperature_c/);
  });

  test('streamed turns (stream: true): the same fallback, translated and from an Anthropic upstream that refuses threads', async () => {
    for (const name of ['chat', 'anthropic-refusing']) {
      const seen = upstream.modelCalls().length;
      const { sent, ran, text } = await runTools(gateway(name), true);
      assert.equal(text, SCRIPT.finalText, name);
      assert.deepEqual(ran, [{ location: 'Paris' }], name);
      assertFellBack(sent);
      const calls = upstream.modelCalls().slice(seen);
      assert.ok(calls.length >= 2 && calls.every((c) => c.body?.stream === true), `${name}: each turn streamed`);
    }
  });

  test("the refusal itself: 400, our {code, message, details} with Anthropic's error and the error.details the SDK reads; nothing sent upstream", async () => {
    const seen = upstream.requests.length;
    const answer = await call(`${gateway('chat').url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: {
        'x-api-key': ADMIN_TOKEN,
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'anthropic-beta': THREADS_BETA,
      },
      body: JSON.stringify({
        model: 'claude-sonnet-5',
        max_tokens: 64,
        thread: { type: 'continue', previous_message_id: 'msg_0123' },
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    });
    assert.equal(answer.status, 400, answer.text);
    const body = answer.json as Json & { error: Json };
    assert.equal(body.code, 'capability_not_supported');
    assert.equal(typeof body.message, 'string');
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
    assert.equal(body.error.message, body.message);
    assert.deepEqual(body.error.details, { error_code: 'thread_unsupported_request', unsupported: ['model'] });
    assert.equal((body.details as Json).field, 'thread');
    assert.deepEqual((body.details as Json).error_details, body.error.details);
    assert.equal(upstream.requests.length, seen, 'nothing sent upstream');
  });

  test('native to an Anthropic upstream that refuses threads: its refusal comes back with its error.details; the SDK falls back and finishes', async () => {
    const seen = upstream.modelCalls().length;
    const { sent, ran, text } = await runTools(gateway('anthropic-refusing'));
    assert.equal(text, SCRIPT.finalText);
    assert.deepEqual(ran, [{ location: 'Paris' }]);
    assertFellBack(sent);
    const calls = upstream.modelCalls().slice(seen);
    assert.deepEqual(
      calls.map((c) => ({
        thread: c.body?.thread,
        beta: c.headers['anthropic-beta']?.includes(THREADS_BETA) ?? false,
      })),
      [
        { thread: { type: 'create' }, beta: true },
        { thread: undefined, beta: false },
        { thread: undefined, beta: false },
      ],
      'the thread request went to Anthropic as it was; Anthropic refused it',
    );
    assert.deepEqual(calls[0]?.reply?.type, 'refusal');
    assert.deepEqual(shapeOf(calls[1]?.body?.messages), FIRST_TURN);
    assert.deepEqual(shapeOf(calls[2]?.body?.messages), WHOLE_LOOP, 'the whole history on the fallback');
  });

  test("an Anthropic upstream's error.details reaches the caller as its error.details (and our details.upstream_details), scrubbed and bounded", async () => {
    upstream.setDecide(() => ({
      type: 'refusal',
      status: 404,
      error: {
        type: 'not_found_error',
        message: 'gone',
        details: {
          error_code: 'thread_not_found',
          echoed: `sent with ${UPSTREAM_KEY}`,
          count: 2,
          names: ['a', 'b'],
          nested: { left: 'out' },
          mixed: ['a', 1],
          'not a name': 'x',
        },
      },
    }));
    try {
      const answer = await call(`${gateway('anthropic-refusing').url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': ADMIN_TOKEN, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] }),
      });
      assert.equal(answer.status, 404, answer.text);
      const body = answer.json as Json & { error: Json; details: Json };
      const expected = { error_code: 'thread_not_found', echoed: 'sent with [REDACTED]', count: 2, names: ['a', 'b'] };
      assert.equal(body.code, 'upstream_rejected_request');
      assert.deepEqual(body.error, { type: 'not_found_error', message: body.message, details: expected });
      assert.deepEqual(body.details.upstream_details, expected);
    } finally {
      upstream.setDecide(agentLoop);
    }
  });

  test('native to an Anthropic upstream that holds threads: created, then continued with only the new messages', async () => {
    const seen = holding.modelCalls().length;
    const { sent, ran, text } = await runTools(gateway('anthropic-holding'));
    assert.equal(text, SCRIPT.finalText);
    assert.deepEqual(ran, [{ location: 'Paris' }]);
    const calls = holding.modelCalls().slice(seen);
    assert.equal(calls.length, 2);
    assert.deepEqual(
      calls.map((c) => c.body?.thread),
      [{ type: 'create' }, { type: 'continue', previous_message_id: messageIdOf(seen + 1) }],
    );
    assert.ok(calls.every((c) => c.headers['anthropic-beta']?.includes(THREADS_BETA)));
    assert.deepEqual(shapeOf(calls[0]?.body?.messages), FIRST_TURN);
    assert.deepEqual(
      shapeOf(calls[1]?.body?.messages),
      [{ role: 'user', content: [`tool_result:${TOOL_RESULT}`] }],
      'a continue sends only what the thread lacks',
    );
    assert.equal(calls[1]?.body?.tools, undefined, 'and no tools: the thread keeps them');
    assert.deepEqual(
      sent.map((s) => s.body.thread),
      calls.map((c) => c.body?.thread),
      'what the SDK sent, as it sent it',
    );
  });
  test("a thread is its maker's: another caller continuing it, or from an id never seen threaded, gets Anthropic's 404 thread_not_found; nothing sent", async () => {
    const gw = gateway('anthropic-holding');
    const other = await scopedKey(gw.store, ['messages']);
    const send = (credential: string, fields: Json) =>
      call(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'x-api-key': credential,
          'content-type': 'application/json',
          'anthropic-version': '2023-06-01',
          'anthropic-beta': THREADS_BETA,
        },
        body: JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 64, ...fields }),
      });
    const continuing = (id: string) => ({
      thread: { type: 'continue', previous_message_id: id },
      messages: [{ role: 'user', content: 'Again' }],
    });
    const notFound = (answer: Awaited<ReturnType<typeof call>>, id: string, label: string): void => {
      assert.equal(answer.status, 404, `${label}: ${answer.text}`);
      const body = answer.json as Json & { error: Json };
      assert.equal(body.code, 'response_not_found', label);
      assert.deepEqual(
        body.error,
        { type: 'not_found_error', message: body.message, details: { error_code: 'thread_not_found' } },
        `${label}: what the SDK starts a new thread on`,
      );
      assert.deepEqual(body.details, {
        id,
        field: 'thread.previous_message_id',
        error_details: { error_code: 'thread_not_found' },
      });
    };
    for (const stream of [false, true]) {
      const made = await send(ADMIN_TOKEN, {
        thread: { type: 'create' },
        messages: [{ role: 'user', content: 'Hi' }],
        stream,
      });
      assert.equal(made.status, 200, made.text);
      const id = stream ? String(/"id":"(msg_[^"]+)"/.exec(made.text)?.[1]) : String(made.json.id);
      const before = holding.modelCalls().length;
      notFound(await send(other, continuing(id)), id, `stream: ${stream}, another caller`);
      notFound(await send(ADMIN_TOKEN, continuing('msg_never_seen')), 'msg_never_seen', 'an unknown id');
      assert.equal(holding.modelCalls().length, before, 'nothing sent upstream');
      const continued = await send(ADMIN_TOKEN, continuing(id));
      assert.equal(continued.status, 200, continued.text);
      assert.deepEqual(holding.modelCalls().at(-1)?.body?.thread, continuing(id).thread);
    }
    const plain = await send(ADMIN_TOKEN, { messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(plain.status, 200);
    const id = String(plain.json.id);
    notFound(await send(ADMIN_TOKEN, continuing(id)), id, 'the id of an answer that made no thread');
  });
});
