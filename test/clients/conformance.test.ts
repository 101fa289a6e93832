/**
 * The conformance suite: every recorded client fixture (test/fixtures/clients/, recorded by `npm run
 * record-traffic`, Claude Code's and Codex's by their own recorders, all in the format of its README) replayed, turn
 * by turn, through the gateway on every path its API can take — natively (chat to an OpenAI-compatible upstream,
 * Responses to a `kind: openai` upstream, Messages to Anthropic, Gemini's API to Gemini) and translated (to chat
 * completions, to Anthropic, to Gemini) — against a mock upstream that plays each turn as the recording server did (the same tool call id, so
 * the recorded turn 2 answers the call turn 1 really made). Each answer must be a complete, valid answer of the
 * caller's own API (wire-validators.ts, responses-validator.ts, gemini-validator.ts), with the tool call intact, and each tool result
 * the caller sends must reach the upstream.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { startScriptedUpstream, type ScriptedUpstream, type WireApi } from '../helpers/upstreams/scripted.js';
import { functionName, type ScriptedRefusal, type ScriptedReply } from '../helpers/upstreams/scripted.js';
import {
  answerFormOf,
  API_KEY_PLACEHOLDER,
  assertGeminiLoop,
  callerApiOf,
  loadClientFixtures,
  refusalOf,
  replyFor,
  resultText,
  toolCallsOf,
  toolResultsOf,
  type CallerApi,
  type ClientFixture,
  type RecordedRequest,
} from '../helpers/client-fixtures.js';
import {
  validateChatJson,
  validateChatStream,
  validateMessagesJson,
  validateMessagesStream,
  type Turn,
} from '../helpers/wire-validators.js';
import { validateResponsesJson, validateResponsesStream } from '../helpers/responses-validator.js';
import { validateGeminiJson, validateGeminiJsonArray, validateGeminiStream } from '../helpers/gemini-validator.js';
import {
  answeredMessageId,
  assertReferenceReached,
  withReplayedReferences,
  type ReplayedPreamble,
} from '../helpers/replayed-references.js';

/** The upstreams a call can end at: each one gateway whose default upstream is of that kind. */
const TARGETS = {
  chat: { kind: 'openai-compatible', base: '/v1' },
  openai: { kind: 'openai', base: '/v1' },
  anthropic: { kind: 'anthropic', base: '/v1' },
  gemini: { kind: 'gemini', base: '/v1beta' },
} as const;
type Target = keyof typeof TARGETS;

/** Every path a caller's API can take: the native one first. */
const PATHS: Record<CallerApi, Target[]> = {
  chat: ['chat', 'anthropic', 'gemini'],
  responses: ['openai', 'chat', 'anthropic', 'gemini'],
  messages: ['anthropic', 'chat', 'gemini'],
  gemini: ['gemini', 'chat', 'anthropic'],
};

/**
 * The wire formats the upstream may be spoken to in, for a caller's API on a target. A Responses call to an
 * upstream that speaks the Responses API is forwarded as it is, unless it translates exactly into chat, which that
 * upstream serves too (docs/responses.md, "Forwarded natively"): either is that path.
 */
function wiresOf(api: CallerApi, target: Target): WireApi[] {
  if (target === 'openai') return api === 'responses' ? ['responses', 'chat'] : ['chat'];
  return [target === 'chat' ? 'chat' : target === 'anthropic' ? 'messages' : 'gemini'];
}

const VALIDATORS: Record<
  CallerApi,
  {
    stream: (text: string) => Turn;
    json: (text: string) => Turn;
    jsonArray?: (text: string) => Turn;
    toolStop: string;
    textStop: string[];
  }
> = {
  chat: { stream: validateChatStream, json: validateChatJson, toolStop: 'tool_calls', textStop: ['stop'] },
  responses: {
    stream: validateResponsesStream,
    json: validateResponsesJson,
    toolStop: 'tool_call',
    textStop: ['completed'],
  },
  messages: {
    stream: validateMessagesStream,
    json: validateMessagesJson,
    toolStop: 'tool_use',
    textStop: ['end_turn'],
  },
  // Gemini has no stop reason of its own for a function call: a turn that calls one ends with STOP too.
  gemini: {
    stream: validateGeminiStream,
    json: validateGeminiJson,
    jsonArray: validateGeminiJsonArray,
    toolStop: 'STOP',
    textStop: ['STOP'],
  },
};

/** Headers the HTTP client makes itself for the replayed request. */
const HOP_HEADERS = new Set(['host', 'content-length', 'connection', 'transfer-encoding', 'keep-alive']);
const CREDENTIAL_HEADERS = new Set(['authorization', 'x-api-key', 'api-key', 'x-goog-api-key']);

function replayHeaders(request: RecordedRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (HOP_HEADERS.has(name)) continue;
    headers[name] = CREDENTIAL_HEADERS.has(name) ? value.split(API_KEY_PLACEHOLDER).join(ADMIN_TOKEN) : value;
  }
  return headers;
}

function target(request: RecordedRequest): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(request.query))
    for (const v of Array.isArray(value) ? value : [value]) query.append(key, v);
  const search = query.toString();
  return search === '' ? request.path : `${request.path}?${search}`;
}

type Json = Record<string, unknown>;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return JSON.stringify(content ?? '');
}

/**
 * Whether the upstream's request carries the tool result `text` answering call `id` (named `name` upstream), in its
 * own API. The text may be there as it is, JSON-escaped, or (a list of parts) as the parts' texts joined.
 */
function upstreamCarries(
  wire: WireApi,
  body: Json,
  result: { id: string; text: string },
  name: string | undefined,
): boolean {
  // A Gemini caller's result may answer its call by name alone (no id): then any id the gateway gave the call will do.
  const sameCall = (id: unknown): boolean => result.id === '' || id === result.id;
  const has = (value: unknown): boolean => {
    const raw = textOf(value);
    if (
      resultText(value).includes(result.text) ||
      raw.includes(result.text) ||
      raw.includes(JSON.stringify(result.text).slice(1, -1))
    )
      return true;
    try {
      return raw.includes(JSON.stringify(JSON.parse(result.text)).slice(1, -1));
    } catch {
      return false;
    }
  };
  if (wire === 'chat')
    return ((body.messages ?? []) as Json[]).some(
      (m) => m.role === 'tool' && sameCall(m.tool_call_id) && has(m.content),
    );
  if (wire === 'responses') {
    return ((Array.isArray(body.input) ? body.input : []) as Json[]).some(
      (i) =>
        (i.type === 'function_call_output' || i.type === 'custom_tool_call_output') &&
        sameCall(i.call_id) &&
        has(i.output),
    );
  }
  if (wire === 'messages') {
    return ((body.messages ?? []) as Json[]).some(
      (m) =>
        m.role === 'user' &&
        Array.isArray(m.content) &&
        (m.content as Json[]).some((b) => b.type === 'tool_result' && sameCall(b.tool_use_id) && has(b.content)),
    );
  }
  const parts = ((body.contents ?? []) as Json[]).flatMap((c) => (Array.isArray(c.parts) ? (c.parts as Json[]) : []));
  return parts.some((p) => {
    const response = p.functionResponse as Json | undefined;
    // An id beside the name (a Gemini caller's own, forwarded natively) must still be the call's.
    const id = response?.id === undefined || sameCall(response.id);
    return response !== undefined && response.name === name && id && has(response.response);
  });
}

/** The function names the upstream's request offers the model, on a wire of plain functions (chat, Messages, Gemini). */
function declaredNames(wire: WireApi, body: Json): string[] {
  const tools = (Array.isArray(body.tools) ? body.tools : []) as Json[];
  if (wire === 'chat') return tools.map((t) => String((t.function as Json | undefined)?.name));
  if (wire === 'messages') return tools.map((t) => String(t.name));
  return tools.flatMap((t) =>
    Array.isArray(t.functionDeclarations) ? (t.functionDeclarations as Json[]).map((d) => String(d.name)) : [],
  );
}

/**
 * The caller's turn is the scripted one: the text, or the tool call as the client recorded it (its name, its
 * namespace, its arguments or a custom tool's raw input), with the API's stop reason. On a wire of plain functions
 * the upstream answered the function the gateway declared for the call's tool (`upstream`: its request), so that
 * function must be among those it was offered.
 */
function checkTurn(
  turn: Turn,
  reply: ScriptedReply,
  api: CallerApi,
  wire: WireApi,
  label: string,
  upstream: Json,
): void {
  const rules = VALIDATORS[api];
  if (reply.type === 'text') {
    assert.deepEqual([turn.toolCalls.length, turn.text], [0, reply.text], `${label}: the final text`);
    assert.ok(rules.textStop.includes(turn.stop), `${label}: stop reason ${turn.stop}`);
    return;
  }
  if (wire !== 'responses') {
    const name = functionName(reply.name, reply.namespace);
    assert.ok(
      declaredNames(wire, upstream).includes(name),
      `${label}: the upstream offered ${name}: ${declaredNames(wire, upstream).join(', ')}`,
    );
  }
  if (reply.type === 'tool_call' && reply.preamble)
    assert.equal(turn.text, reply.preamble.text, `${label}: the text the model wrote before its call`);
  assert.equal(turn.toolCalls.length, 1, `${label}: one tool call`);
  const [made] = turn.toolCalls as [Turn['toolCalls'][number]];
  assert.deepEqual(
    { name: made.name, namespace: made.namespace },
    { name: reply.name, namespace: reply.namespace },
    `${label}: the tool's name and namespace`,
  );
  if (reply.type === 'custom_tool_call')
    assert.equal(made.input, reply.input, `${label}: a custom tool call, with its input`);
  else {
    assert.equal(made.input, undefined, `${label}: a function call`);
    assert.deepEqual(JSON.parse(made.arguments), JSON.parse(reply.arguments), `${label}: the tool's arguments`);
  }
  assert.equal(turn.stop, rules.toolStop, `${label}: stop reason`);
  // Gemini has no call ids: the gateway makes one for a caller of another API; a Gemini caller gets Gemini's answer
  // as it came (no id: the client makes its own). Every other upstream's id reaches the caller as it was.
  if (wire === 'gemini' && api === 'gemini') assert.equal(made.id, '', `${label}: Gemini's answer untouched`);
  else if (wire === 'gemini') assert.ok(made.id !== '', `${label}: a call id`);
  else assert.equal(made.id, reply.id, `${label}: the upstream's call id`);
}

describe('conformance: recorded client traffic replayed through every path', () => {
  // CONFORMANCE_FIXTURES: another folder of the same layout (a fresh recording, before it is committed).
  const { fixtures, invalid } = loadClientFixtures(process.env.CONFORMANCE_FIXTURES);
  let upstream: ScriptedUpstream;
  const gateways = new Map<Target, TestGateway>();

  before(async () => {
    upstream = await startScriptedUpstream();
    await Promise.all(
      (Object.keys(TARGETS) as Target[]).map(async (name) => {
        const { kind, base } = TARGETS[name];
        const text = [
          'upstreams:',
          '  - name: up',
          `    kind: ${kind}`,
          `    base_url: ${upstream.origin}${base}`,
          '    api_key_env: CONFORMANCE_UPSTREAM_KEY',
          'default_upstream: up',
          'limits:',
          '  upstream_pause_max_seconds: 0',
        ].join('\n');
        // The key shares no word with recorded traffic: the gateway redacts pieces of its keys from answers, and
        // `npm run conformance -- --record` fixtures carry `conformance.txt` in their tool calls.
        gateways.set(
          name,
          await startGateway({
            env: { CONFORMANCE_UPSTREAM_KEY: 'sk-replay-upstream-0123456789' },
            configFile: { name: 'conformance.yaml', text },
          }),
        );
      }),
    );
  });
  after(async () => {
    await Promise.all([...gateways.values()].map((gw) => gw.close()));
    await upstream.close();
  });

  test('every fixture is a whole agent loop: a tool call answered, its result sent back, a final answer', () => {
    assert.deepEqual(
      invalid,
      [],
      'every .json in a client folder is a fixture of the format (test/fixtures/clients/README.md)',
    );
    assert.ok(fixtures.length >= 11, `fixtures found: ${fixtures.map((f) => f.name).join(', ')}`);
    for (const fixture of fixtures) {
      for (const [i, request] of fixture.requests.entries()) {
        for (const name of ['authorization', 'x-api-key', 'api-key', 'x-goog-api-key']) {
          const value = request.headers[name];
          assert.ok(
            value === undefined || value === API_KEY_PLACEHOLDER || value === `Bearer ${API_KEY_PLACEHOLDER}`,
            `${fixture.name} request ${i}: ${name} is a placeholder`,
          );
        }
      }
      // Gemini's calls carry no server ids: its loop is checked by the function's name (the client makes the ids).
      if (fixture.requests.some((r) => callerApiOf(r) === 'gemini')) {
        assertGeminiLoop(fixture);
        continue;
      }
      const calls = fixture.requests
        .map((r, i) => ({ api: callerApiOf(r), r, i }))
        .filter((c) => c.api !== undefined && c.r.body && refusalOf(c.r) === undefined);
      const toolTurn = calls.find((c) => replyFor(fixture, c.i).type !== 'text');
      assert.ok(toolTurn, `${fixture.name}: a turn answered with a tool call`);
      const reply = replyFor(fixture, toolTurn.i) as Exclude<ScriptedReply, { type: 'text' }>;
      const answered = calls.find(
        (c) => c.i > toolTurn.i && toolResultsOf(c.api as CallerApi, c.r.body ?? {}).some((t) => t.id === reply.id),
      );
      assert.ok(answered, `${fixture.name}: a later call sends the result of ${reply.id}`);
      assert.ok(
        calls.some((c) => c.i > (answered?.i ?? 0) - 1 && replyFor(fixture, c.i).type === 'text'),
        `${fixture.name}: a final text`,
      );
    }
  });

  for (const fixture of fixtures) {
    const api = fixture.requests.map(callerApiOf).find((a) => a !== undefined);
    if (api === undefined) continue;
    PATHS[api].forEach((name, n) => {
      test(`${fixture.name} (${api}) → ${name}${n === 0 ? ' (native)' : ''}`, async (t) => {
        const wires = await replay(fixture, name, n === 0);
        t.diagnostic(`upstream spoken to in: ${wires.join(', ')}`);
      });
    });
  }

  /** Sends a recorded request to a gateway as it was recorded (our admin token for its credential). */
  function send(gw: TestGateway, request: RecordedRequest): ReturnType<typeof call> {
    return call(`${gw.url}${target(request)}`, {
      method: request.method,
      headers: replayHeaders(request),
      body: JSON.stringify(request.body),
    });
  }

  /**
   * A call the recording server refused (a message thread, which it holds no more than a translated path does): the
   * caller gets the same status and the same `error.details.error_code` on every path — natively the upstream's own
   * refusal of the request as it came, passed on; translated the gateway's, with nothing sent upstream.
   */
  async function replayRefusal(
    gw: TestGateway,
    request: RecordedRequest,
    refusal: ScriptedRefusal,
    native: boolean,
    label: string,
  ): Promise<void> {
    upstream.setDecide(() => refusal);
    const seen = upstream.modelCalls().length;
    const answer = await send(gw, request);
    assert.equal(answer.status, refusal.status, `${label}: refused as recorded: ${answer.text.slice(0, 600)}`);
    const code = (error: unknown): unknown => ((error as Json | undefined)?.details as Json | undefined)?.error_code;
    assert.equal(code(answer.json.error), code(refusal.error), `${label}: error.details.error_code`);
    const sent = upstream.modelCalls().slice(seen);
    assert.equal(
      sent.length,
      native ? 1 : 0,
      `${label}: ${native ? 'the upstream refused it' : 'nothing sent upstream'}`,
    );
    if (native) assert.deepEqual(sent[0]?.body, request.body, `${label}: forwarded as it came`);
  }

  /** Replays the fixture's model calls in order; returns the API the upstream was spoken to in, per call. */
  async function replay(fixture: ClientFixture, name: Target, native: boolean): Promise<WireApi[]> {
    const gw = gateways.get(name) as TestGateway;
    const spoken: WireApi[] = [];
    // The earlier answers' messages a later call may refer to by item_reference: the recorded id → this replay's.
    const preambles = new Map<string, ReplayedPreamble>();
    for (const [index, request] of fixture.requests.entries()) {
      const api = callerApiOf(request);
      if (api === undefined || request.body === null) continue;
      const label = `${fixture.name} request ${index} → ${name}`;
      const refusal = refusalOf(request);
      if (refusal) {
        await replayRefusal(gw, request, refusal, native, label);
        continue;
      }
      const wires = wiresOf(api, name);
      const reply = replyFor(fixture, index);
      upstream.setDecide(() => reply);
      const seen = upstream.modelCalls().length;
      const { body, referred } = withReplayedReferences(request.body, preambles);
      const answer = await send(gw, { ...request, body });
      assert.equal(answer.status, 200, `${label}: ${answer.text.slice(0, 600)}`);
      const rules = VALIDATORS[api];
      const form = answerFormOf(api, request);
      const validate = form === 'sse' ? rules.stream : form === 'json-array' ? rules.jsonArray : rules.json;
      assert.ok(validate, `${label}: a validator of ${api} answers as ${form}`);
      const turn = validate(answer.text);
      const sent = upstream.modelCalls().slice(seen);
      assert.equal(sent.length, 1, `${label}: one call to the upstream`);
      const wire = sent[0]?.api as WireApi;
      assert.ok(wires.includes(wire), `${label}: the upstream spoken to in ${wires.join(' or ')}, not ${wire}`);
      spoken.push(wire);
      // Natively, Gemini's API is forwarded as the caller sent it: thought signatures, ids, tools, settings untouched.
      if (api === 'gemini' && wire === 'gemini') {
        assert.deepEqual(sent[0]?.body, request.body, `${label}: the request forwarded untouched`);
        const call = request.path.slice(request.path.lastIndexOf('/models/'));
        assert.equal(sent[0]?.url.split('?')[0]?.endsWith(call), true, `${label}: to ${call}, not ${sent[0]?.url}`);
      }
      checkTurn(turn, reply, api, wire, label, sent[0]?.body ?? {});
      for (const preamble of referred) assertReferenceReached(wire, sent[0]?.body ?? {}, preamble, label);
      if (reply.type === 'tool_call' && reply.preamble?.id !== undefined) {
        const id = answeredMessageId(answer.text, form);
        assert.ok(id, `${label}: the output message holding the text before the call`);
        preambles.set(reply.preamble.id, { id, text: reply.preamble.text });
      }
      // The name each call has upstream (Gemini answers a result by it): on a wire of plain functions, its flat one.
      const names = new Map(
        toolCallsOf(api, request.body).map((c) => [
          c.id,
          wire === 'responses' ? c.name : functionName(c.name, c.namespace),
        ]),
      );
      for (const result of toolResultsOf(api, request.body)) {
        assert.ok(
          upstreamCarries(wire, sent[0]?.body ?? {}, result, names.get(result.id)),
          `${label}: the result of ${result.id} reaches the upstream: ${JSON.stringify(sent[0]?.body).slice(0, 1500)}`,
        );
      }
    }
    return spoken;
  }
});
