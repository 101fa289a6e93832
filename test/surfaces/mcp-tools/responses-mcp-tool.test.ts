/**
 * The Responses API's `mcp` tool, run by the gateway for every translated upstream kind (surfaces/mcp-tools/): the
 * model is offered the real server-everything's tools as functions, its call of `everything__echo` is made through
 * the tool service, the server's real answer goes back to the model, and the answer carries `mcp_list_tools` and
 * `mcp_call` items (JSON and stream, in OpenAI's shapes); approvals, the loop's bound, a failing tool, refusals.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { ADMIN_TOKEN, authHeaders } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { namedEvents, readStream } from '../../helpers/sse-client.js';
import { scopedKey } from '../../helpers/scoped-key.js';
import {
  callTool,
  ECHO_FUNCTION,
  ECHO_MESSAGE,
  ECHO_OUTPUT,
  echoForever,
  echoThenAnswer,
  FINAL_TEXT,
  MODELS,
  NATIVE_MODEL,
  toolCallsOfRequest,
  useMcpLoopGateway,
} from '../../helpers/mcp-loop-fixture.js';
import type { ScriptedRequest } from '../../helpers/upstreams/scripted.js';
import { KINDS, offeredTools } from '../../helpers/upstreams/scripted-kinds.js';

type Json = Record<string, unknown>;

const MCP_TOOL = { type: 'mcp', server_label: 'everything', require_approval: 'never' };

function body(model: string, extra: Json = {}): string {
  return JSON.stringify({ model, input: 'Echo something, please.', tools: [MCP_TOOL], store: false, ...extra });
}

async function responses(url: string, text: string, headers = authHeaders()) {
  return call(`${url}/v1/responses`, { method: 'POST', headers, body: text });
}

describe('the mcp tool on the Responses API, run by the gateway', () => {
  const fx = useMcpLoopGateway(['mcp:', '  max_loop_calls: 3']);

  for (const [kind, model] of KINDS) {
    test(`${kind}: JSON — the upstream is offered the server's tools, gets the real echo; mcp items in the answer`, async () => {
      fx.upstream.setDecide(echoThenAnswer);
      const seen = fx.upstream.modelCalls().length;
      const answer = await responses(fx.gw.url, body(model));
      assert.equal(answer.status, 200, answer.text);
      const calls = fx.upstream.modelCalls().slice(seen);
      assert.equal(calls.length, 2, 'a tool turn, then the answer');
      const offered = offeredTools(calls[0] as ScriptedRequest);
      assert.ok(offered.includes(ECHO_FUNCTION), offered.join());
      assert.ok(offered.every((name) => name.startsWith('everything__')));
      assert.deepEqual(offered, [...offered].sort(), 'a stable order: by tool name');
      assert.ok(JSON.stringify((calls[1] as ScriptedRequest).body).includes(ECHO_OUTPUT), 'the tool result fed back');
      const output = answer.json.output as Json[];
      assert.deepEqual(
        output.map((item) => item.type),
        ['mcp_list_tools', 'mcp_call', 'message'],
      );
      const listing = output[0] as Json;
      assert.equal(listing.server_label, 'everything');
      const echo = (listing.tools as Json[]).find((tool) => tool.name === 'echo');
      assert.ok(echo, 'the echo tool is listed');
      assert.equal((echo.input_schema as Json).type, 'object');
      assert.equal(typeof echo.description, 'string');
      assert.ok('annotations' in echo);
      const mcpCall = output[1] as Json;
      assert.match(String(mcpCall.id), /^mcp_/);
      assert.deepEqual(
        { ...mcpCall, id: undefined },
        {
          type: 'mcp_call',
          id: undefined,
          status: 'completed',
          approval_request_id: null,
          arguments: JSON.stringify({ message: ECHO_MESSAGE }),
          error: null,
          name: 'echo',
          output: ECHO_OUTPUT,
          server_label: 'everything',
        },
      );
      const part = ((output[2] as Json).content as Json[])[0] as Json;
      assert.equal(part.text, FINAL_TEXT);
      assert.equal(answer.json.status, 'completed');
      const usage = answer.json.usage as Json;
      assert.equal(usage.input_tokens, 84, 'both turns counted (42 each, as the scripted upstream reports)');
    });

    test(`${kind}: stream — the listing's and the call's events in OpenAI's shapes and order`, async () => {
      fx.upstream.setDecide(echoThenAnswer);
      const answer = await readStream(`${fx.gw.url}/v1/responses`, body(model, { stream: true }), authHeaders());
      assert.equal(answer.status, 200, answer.text);
      const events = namedEvents(answer.text);
      const types = events.map((e) => e.event);
      const expected = [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.mcp_list_tools.in_progress',
        'response.mcp_list_tools.completed',
        'response.output_item.done',
        'response.output_item.added',
        'response.mcp_call.in_progress',
        'response.mcp_call_arguments.delta',
        'response.mcp_call_arguments.done',
        'response.mcp_call.completed',
        'response.output_item.done',
        'response.output_item.added',
      ];
      assert.deepEqual(types.slice(0, expected.length), expected, types.join('\n'));
      const listAdded = events[2]?.data as Json;
      assert.deepEqual((listAdded.item as Json).tools, [], 'the listing is added empty, done with its tools');
      const listDone = (events[5]?.data as Json).item as Json;
      assert.ok((listDone.tools as Json[]).some((tool) => tool.name === 'echo'));
      const callAdded = (events[6]?.data as Json).item as Json;
      assert.deepEqual(
        { status: callAdded.status, arguments: callAdded.arguments, output: callAdded.output, name: callAdded.name },
        { status: 'in_progress', arguments: '', output: null, name: 'echo' },
      );
      assert.equal((events[8]?.data as Json).delta, JSON.stringify({ message: ECHO_MESSAGE }));
      assert.equal((events[9]?.data as Json).arguments, JSON.stringify({ message: ECHO_MESSAGE }));
      assert.deepEqual(
        [(events[10]?.data as Json).item_id, (events[10]?.data as Json).output_index],
        [callAdded.id, 1],
      );
      const callDone = (events[11]?.data as Json).item as Json;
      assert.equal(callDone.output, ECHO_OUTPUT);
      assert.equal(callDone.status, 'completed');
      const text = events
        .filter((e) => e.event === 'response.output_text.delta')
        .map((e) => e.data.delta)
        .join('');
      assert.equal(text, FINAL_TEXT);
      const completed = events.at(-1);
      assert.equal(completed?.event, 'response.completed');
      const output = (completed?.data.response as Json).output as Json[];
      assert.deepEqual(
        output.map((item) => item.type),
        ['mcp_list_tools', 'mcp_call', 'message'],
      );
      assert.equal((output[1] as Json).output, ECHO_OUTPUT);
      const sequence = events.map((e) => e.data.sequence_number);
      assert.deepEqual(sequence, [...sequence.keys()]);
    });
  }

  test("each call has its record: the caller, the server and tool, via responses, the model call's request id", async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const answer = await responses(fx.gw.url, body(MODELS.gemini));
    assert.equal(answer.status, 200, answer.text);
    const requestId = String(answer.headers['x-request-id']);
    const records = await toolCallsOfRequest(fx.gw, requestId);
    assert.deepEqual(
      records.map((r) => [r.caller, r.server, r.tool, r.via, r.outcome]),
      [['admin', 'everything', 'echo', 'responses', 'ok']],
    );
  });

  test('approval (the default): the answer ends with an mcp_approval_request; approving it by previous_response_id runs it', async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const seen = fx.upstream.modelCalls().length;
    const first = await responses(
      fx.gw.url,
      JSON.stringify({
        model: MODELS.chat,
        input: 'Echo something, please.',
        tools: [{ type: 'mcp', server_label: 'everything' }],
      }),
    );
    assert.equal(first.status, 200, first.text);
    assert.equal(fx.upstream.modelCalls().length, seen + 1, 'no call was made: one turn');
    const output = first.json.output as Json[];
    assert.deepEqual(
      output.map((item) => item.type),
      ['mcp_list_tools', 'mcp_approval_request'],
    );
    const request = output[1] as Json;
    assert.match(String(request.id), /^mcpr_/);
    assert.deepEqual(
      { name: request.name, server_label: request.server_label, arguments: request.arguments },
      { name: 'echo', server_label: 'everything', arguments: JSON.stringify({ message: ECHO_MESSAGE }) },
    );
    const second = await responses(
      fx.gw.url,
      JSON.stringify({
        model: MODELS.chat,
        previous_response_id: first.json.id,
        input: [{ type: 'mcp_approval_response', approval_request_id: request.id, approve: true }],
        tools: [{ type: 'mcp', server_label: 'everything' }],
      }),
    );
    assert.equal(second.status, 200, second.text);
    const calls = fx.upstream.modelCalls().slice(seen);
    assert.equal(calls.length, 2);
    const messages = (calls[1] as ScriptedRequest).body?.messages as Json[];
    const tool = messages.find((m) => m.role === 'tool');
    assert.deepEqual([tool?.tool_call_id, tool?.content], [request.id, ECHO_OUTPUT]);
    const after = second.json.output as Json[];
    const made = after.find((item) => item.type === 'mcp_call');
    assert.deepEqual([made?.approval_request_id, made?.output], [request.id, ECHO_OUTPUT]);
    assert.equal(after.at(-1)?.type, 'message');
  });

  test('approval, streamed: the approval request is an item added and done; the call is not run', async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const answer = await readStream(
      `${fx.gw.url}/v1/responses`,
      body(MODELS.anthropic, { stream: true, tools: [{ type: 'mcp', server_label: 'everything' }] }),
      authHeaders(),
    );
    assert.equal(answer.status, 200, answer.text);
    const events = namedEvents(answer.text);
    assert.ok(!events.some((e) => (e.event ?? '').startsWith('response.mcp_call')), 'no call was made');
    const added = events.filter((e) => e.event === 'response.output_item.added').map((e) => e.data.item as Json);
    assert.deepEqual(
      added.map((item) => item.type),
      ['mcp_list_tools', 'mcp_approval_request'],
    );
    const completed = events.at(-1);
    assert.equal(completed?.event, 'response.completed');
    const output = (completed?.data.response as Json).output as Json[];
    assert.deepEqual(
      output.map((item) => item.type),
      ['mcp_list_tools', 'mcp_approval_request'],
    );
    assert.equal((output[1] as Json).arguments, JSON.stringify({ message: ECHO_MESSAGE }));
  });

  test('approval declined, the items sent back in input (no stored response): the tool is not called', async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const request = {
      type: 'mcp_approval_request',
      id: 'mcpr_declined0001',
      server_label: 'everything',
      name: 'echo',
      arguments: JSON.stringify({ message: ECHO_MESSAGE }),
    };
    const seen = fx.upstream.modelCalls().length;
    const answer = await responses(
      fx.gw.url,
      JSON.stringify({
        model: MODELS.anthropic,
        store: false,
        input: [
          { role: 'user', content: 'Echo something, please.' },
          request,
          { type: 'mcp_approval_response', approval_request_id: request.id, approve: false },
        ],
        tools: [{ type: 'mcp', server_label: 'everything', require_approval: 'always' }],
      }),
    );
    assert.equal(answer.status, 200, answer.text);
    const sent = JSON.stringify(fx.upstream.modelCalls()[seen]?.body);
    assert.match(sent, /did not approve/);
    assert.ok(!(answer.json.output as Json[]).some((item) => item.type === 'mcp_call'));
  });

  test('an approval response that answers no request is a 400 naming it', async () => {
    const answer = await responses(
      fx.gw.url,
      JSON.stringify({
        model: MODELS.chat,
        store: false,
        input: [
          { role: 'user', content: 'Hi' },
          { type: 'mcp_approval_response', approval_request_id: 'mcpr_nothing', approve: true },
        ],
        tools: [MCP_TOOL],
      }),
    );
    assert.equal(answer.status, 400, answer.text);
    assert.equal(answer.json.details?.field, 'input[1].approval_request_id');
  });

  test('a model that keeps calling: at most mcp.max_loop_calls calls, then one turn with tool_choice none', async () => {
    fx.upstream.setDecide(echoForever);
    const seen = fx.upstream.modelCalls().length;
    const answer = await responses(fx.gw.url, body(MODELS.gemini));
    assert.equal(answer.status, 200, answer.text);
    const calls = fx.upstream.modelCalls().slice(seen);
    assert.equal(calls.length, 4);
    assert.match(JSON.stringify(calls[3]?.body?.toolConfig), /NONE/);
    const output = answer.json.output as Json[];
    assert.equal(output.filter((item) => item.type === 'mcp_call').length, 3);
    assert.equal(answer.json.status, 'completed');
  });

  test("a tool's failure is the call's error and the model's tool result, not a failed response", async () => {
    fx.upstream.setDecide(callTool(ECHO_FUNCTION, { wrong: 1 }, 'It failed.'));
    const seen = fx.upstream.modelCalls().length;
    const answer = await responses(fx.gw.url, body(MODELS.chat));
    assert.equal(answer.status, 200, answer.text);
    const made = (answer.json.output as Json[]).find((item) => item.type === 'mcp_call') as Json;
    assert.notEqual(made.error, null, JSON.stringify(made));
    assert.equal(made.status, 'failed');
    const messages = fx.upstream.modelCalls()[seen + 1]?.body?.messages as Json[];
    assert.match(String(messages.find((m) => m.role === 'tool')?.content), /error|failed/i);
    assert.equal(answer.json.status, 'completed');
  });

  test('allowed_tools: only the named tools are offered', async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const seen = fx.upstream.modelCalls().length;
    const answer = await responses(
      fx.gw.url,
      body(MODELS.chat, { tools: [{ ...MCP_TOOL, allowed_tools: { tool_names: ['echo', 'get-sum'] } }] }),
    );
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(offeredTools(fx.upstream.modelCalls()[seen] as ScriptedRequest), [
      ECHO_FUNCTION,
      'everything__get-sum',
    ]);
    const listing = (answer.json.output as Json[])[0] as Json;
    assert.deepEqual(
      (listing.tools as Json[]).map((tool) => tool.name),
      ['echo', 'get-sum'],
    );
  });

  test('a server_label this gateway does not have: 404 mcp_server_not_found naming the field; nothing upstream', async () => {
    const seen = fx.upstream.modelCalls().length;
    const answer = await responses(
      fx.gw.url,
      body(MODELS.anthropic, { tools: [{ type: 'mcp', server_label: 'github', require_approval: 'never' }] }),
    );
    assert.equal(answer.status, 404, answer.text);
    assert.equal(answer.json.code, 'mcp_server_not_found');
    assert.equal(answer.json.details?.field, 'tools[0].server_label');
    assert.equal(fx.upstream.modelCalls().length, seen);
  });

  test("a server_url that is the configured server's URL: the gateway runs it", async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const seen = fx.upstream.modelCalls().length;
    const answer = await responses(
      fx.gw.url,
      body(MODELS.anthropic, { tools: [{ ...MCP_TOOL, server_label: 'web', server_url: fx.webUrl }] }),
    );
    assert.equal(answer.status, 200, answer.text);
    assert.ok(offeredTools(fx.upstream.modelCalls()[seen] as ScriptedRequest).includes('web__echo'));
    const made = (answer.json.output as Json[]).find((item) => item.type === 'mcp_call');
    assert.deepEqual([made?.server_label, made?.output], ['web', ECHO_OUTPUT]);
  });

  test('a key made with mcp_tools through the admin API: offered only its tools; another server’s patterns: 404', async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const create = async (mcpTools: string[]) => {
      const made = await call(`${fx.gw.url}/v1/?route=keys`, {
        method: 'POST',
        headers: authHeaders(),
        body: JSON.stringify({ name: 'mcp-loop', models: ['*'], routes: ['responses', 'mcp'], mcp_tools: mcpTools }),
        disclosesKey: true,
      });
      assert.equal(made.status, 201, made.text);
      return { authorization: `Bearer ${String(made.json.key)}`, 'content-type': 'application/json' };
    };
    const seen = fx.upstream.modelCalls().length;
    const answer = await responses(fx.gw.url, body(MODELS.chat), await create(['everything/echo']));
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(offeredTools(fx.upstream.modelCalls()[seen] as ScriptedRequest), [ECHO_FUNCTION]);
    const made = (answer.json.output as Json[]).find((item) => item.type === 'mcp_call');
    assert.equal(made?.output, ECHO_OUTPUT);
    const other = await responses(fx.gw.url, body(MODELS.chat), await create(['web/*']));
    assert.equal(other.status, 404, other.text);
    assert.deepEqual(other.json.details?.servers, ['web']);
  });

  test('a server_url that is not the configured server: 400 mcp_server_url_refused; nothing upstream', async () => {
    const seen = fx.upstream.modelCalls().length;
    const answer = await responses(
      fx.gw.url,
      body(MODELS.gemini, { tools: [{ ...MCP_TOOL, server_url: 'http://169.254.169.254/mcp' }] }),
    );
    assert.equal(answer.status, 400, answer.text);
    assert.equal(answer.json.code, 'mcp_server_url_refused');
    assert.equal(answer.json.details?.field, 'tools[0].server_url');
    assert.equal(fx.upstream.modelCalls().length, seen);
  });

  test('a key without the mcp route, and one with it but no mcp_tools: the server is not theirs (404)', async () => {
    for (const routes of [['responses'], ['responses', 'mcp']]) {
      const key = await scopedKey(fx.gw.store, routes);
      const answer = await responses(fx.gw.url, body(MODELS.chat), {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
      });
      assert.equal(answer.status, 404, answer.text);
      assert.equal(answer.json.code, 'mcp_server_not_found');
      assert.deepEqual(answer.json.details?.servers, [], 'no server is named to a caller that may use none');
    }
  });

  test('a natively served model with a public server_url: forwarded as it is (OpenAI calls its server itself)', async () => {
    const seen = fx.upstream.requests.length;
    const tool = { type: 'mcp', server_label: 'deepwiki', server_url: 'https://mcp.deepwiki.com/mcp' };
    await responses(fx.gw.url, body(NATIVE_MODEL, { tools: [tool] }));
    const sent = fx.upstream.requests.slice(seen).find((r) => r.url.endsWith('/responses'));
    assert.ok(sent, 'the request went to the upstream /responses');
    assert.deepEqual(sent.body?.tools, [tool]);
  });

  test('a natively served model with a server of this gateway: the gateway runs it (through chat)', async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const answer = await responses(fx.gw.url, body(NATIVE_MODEL));
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(
      (answer.json.output as Json[]).map((item) => item.type),
      ['mcp_list_tools', 'mcp_call', 'message'],
    );
  });

  test('through the official openai client: responses.create with an mcp tool', async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const client = new OpenAI({ apiKey: ADMIN_TOKEN, baseURL: `${fx.gw.url}/v1` });
    const response = await client.responses.create({
      model: MODELS.anthropic,
      input: 'Echo something, please.',
      tools: [{ type: 'mcp', server_label: 'everything', require_approval: 'never' }],
      store: false,
    });
    const made = response.output.find((item) => item.type === 'mcp_call');
    assert.equal(made?.type === 'mcp_call' ? made.output : undefined, ECHO_OUTPUT);
    assert.equal(response.output_text, FINAL_TEXT);
    const stream = await client.responses.create({
      model: MODELS.gemini,
      input: 'Echo something, please.',
      tools: [{ type: 'mcp', server_label: 'everything', require_approval: 'never' }],
      store: false,
      stream: true,
    });
    const seen: string[] = [];
    for await (const event of stream) seen.push(event.type);
    assert.ok(seen.includes('response.mcp_call.completed'), seen.join());
  });
});
