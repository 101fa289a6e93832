/**
 * The Messages API's `mcp_servers` (Anthropic's MCP connector), run by the gateway (surfaces/mcp-tools/): an entry
 * that names a configured server (by name, or by the server's endpoint on this gateway) has its tools offered to the
 * model whoever serves it, each call made through the tool service, and the answer carries `mcp_tool_use` and
 * `mcp_tool_result` blocks (JSON and stream, as Anthropic streams them). Servers that are not this gateway's are
 * refused on a translated upstream and go to Anthropic as they are.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { ADMIN_TOKEN, authHeaders } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { namedEvents, readStream } from '../../helpers/sse-client.js';
import {
  ECHO_FUNCTION,
  ECHO_MESSAGE,
  ECHO_OUTPUT,
  echoThenAnswer,
  FINAL_TEXT,
  MODELS,
  toolCallsOfRequest,
  useMcpLoopGateway,
} from '../../helpers/mcp-loop-fixture.js';
import type { ScriptedRequest } from '../../helpers/upstreams/scripted.js';
import { KINDS } from '../../helpers/upstreams/scripted-kinds.js';

type Json = Record<string, unknown>;

const BETA = { 'anthropic-beta': 'mcp-client-2025-04-04', 'anthropic-version': '2023-06-01' };

function body(model: string, servers: unknown[], extra: Json = {}): string {
  return JSON.stringify({
    model,
    max_tokens: 256,
    messages: [{ role: 'user', content: 'Echo something, please.' }],
    mcp_servers: servers,
    ...extra,
  });
}

async function messages(url: string, text: string) {
  return call(`${url}/v1/messages`, { method: 'POST', headers: authHeaders(BETA), body: text });
}

describe('mcp_servers on the Messages API, run by the gateway', () => {
  const fx = useMcpLoopGateway();
  const server = () => ({ type: 'url', url: `${fx.gw.url}/mcp/everything`, name: 'everything' });

  for (const [kind, model] of KINDS) {
    test(`${kind}: JSON — the real echo's mcp_tool_use and mcp_tool_result blocks, then the answer`, async () => {
      fx.upstream.setDecide(echoThenAnswer);
      const seen = fx.upstream.modelCalls().length;
      const answer = await messages(fx.gw.url, body(model, [server()]));
      assert.equal(answer.status, 200, answer.text);
      const calls = fx.upstream.modelCalls().slice(seen);
      assert.equal(calls.length, 2);
      assert.match(JSON.stringify(calls[0]?.body?.tools), new RegExp(ECHO_FUNCTION));
      assert.ok(JSON.stringify(calls[1]?.body).includes(ECHO_OUTPUT), 'the tool result fed back');
      const content = answer.json.content as Json[];
      assert.deepEqual(
        content.map((block) => block.type),
        ['mcp_tool_use', 'mcp_tool_result', 'text'],
      );
      const use = content[0] as Json;
      assert.match(String(use.id), /^mcptoolu_/);
      assert.deepEqual(
        { ...use, id: undefined },
        {
          type: 'mcp_tool_use',
          id: undefined,
          name: 'echo',
          server_name: 'everything',
          input: { message: ECHO_MESSAGE },
        },
      );
      assert.deepEqual(content[1], {
        type: 'mcp_tool_result',
        tool_use_id: use.id,
        is_error: false,
        content: [{ type: 'text', text: ECHO_OUTPUT }],
      });
      assert.equal((content[2] as Json).text, FINAL_TEXT);
      assert.equal(answer.json.stop_reason, 'end_turn');
    });

    test(`${kind}: stream — the blocks as Anthropic streams a server tool's`, async () => {
      fx.upstream.setDecide(echoThenAnswer);
      const answer = await readStream(
        `${fx.gw.url}/v1/messages`,
        body(model, [server()], { stream: true }),
        authHeaders(BETA),
      );
      assert.equal(answer.status, 200, answer.text);
      const events = namedEvents(answer.text);
      const starts = events.filter((e) => e.event === 'content_block_start').map((e) => e.data);
      assert.deepEqual(
        starts.map((s) => [s.index, (s.content_block as Json).type]),
        [
          [0, 'mcp_tool_use'],
          [1, 'mcp_tool_result'],
          [2, 'text'],
        ],
      );
      assert.deepEqual((starts[0]?.content_block as Json).input, {});
      const json = events
        .filter((e) => e.event === 'content_block_delta' && e.data.index === 0)
        .map((e) => (e.data.delta as Json).partial_json)
        .join('');
      assert.deepEqual(JSON.parse(json), { message: ECHO_MESSAGE });
      assert.deepEqual((starts[1]?.content_block as Json).content, [{ type: 'text', text: ECHO_OUTPUT }]);
      const text = events
        .filter((e) => e.event === 'content_block_delta' && e.data.index === 2)
        .map((e) => (e.data.delta as Json).text)
        .join('');
      assert.equal(text, FINAL_TEXT);
      const stops = events.filter((e) => e.event === 'content_block_stop').map((e) => e.data.index);
      assert.deepEqual(stops, [0, 1, 2]);
      assert.equal(events.at(-1)?.event, 'message_stop');
    });
  }

  test('each call has its record, via messages', async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const answer = await messages(fx.gw.url, body(MODELS.chat, [server()]));
    assert.equal(answer.status, 200, answer.text);
    const requestId = String(answer.headers['request-id'] ?? answer.headers['x-request-id']);
    const records = await toolCallsOfRequest(fx.gw, requestId);
    assert.deepEqual(
      records.map((r) => [r.caller, r.server, r.tool, r.via, r.outcome]),
      [['admin', 'everything', 'echo', 'messages', 'ok']],
    );
  });

  test('a later turn that carries the mcp blocks back: the upstream gets them as a call and its result', async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const seen = fx.upstream.modelCalls().length;
    const answer = await messages(
      fx.gw.url,
      JSON.stringify({
        model: MODELS.chat,
        max_tokens: 64,
        mcp_servers: [server()],
        messages: [
          { role: 'user', content: 'Echo something, please.' },
          {
            role: 'assistant',
            content: [
              {
                type: 'mcp_tool_use',
                id: 'mcptoolu_1',
                name: 'echo',
                server_name: 'everything',
                input: { message: 'x' },
              },
              {
                type: 'mcp_tool_result',
                tool_use_id: 'mcptoolu_1',
                is_error: false,
                content: [{ type: 'text', text: ECHO_OUTPUT }],
              },
              { type: 'text', text: 'Done.' },
            ],
          },
          { role: 'user', content: 'Thanks.' },
        ],
      }),
    );
    assert.equal(answer.status, 200, answer.text);
    const sent = fx.upstream.modelCalls()[seen]?.body?.messages as Json[];
    assert.deepEqual(
      sent.map((m) => m.role),
      ['user', 'assistant', 'tool', 'assistant', 'user'],
    );
    assert.equal(((sent[1]?.tool_calls as Json[])[0]?.function as Json).name, ECHO_FUNCTION);
    assert.equal(sent[2]?.content, ECHO_OUTPUT);
  });

  test('a translated model: an unknown server is 404, a url that is not the server’s is 400; nothing upstream', async () => {
    const seen = fx.upstream.modelCalls().length;
    const unknown = await messages(
      fx.gw.url,
      body(MODELS.gemini, [{ type: 'url', url: 'https://mcp.example.com/sse', name: 'example' }]),
    );
    assert.equal(unknown.status, 404, unknown.text);
    assert.equal(unknown.json.code, 'mcp_server_not_found');
    assert.equal(unknown.json.details?.field, 'mcp_servers[0].name');
    const elsewhere = await messages(
      fx.gw.url,
      body(MODELS.chat, [{ type: 'url', url: 'http://10.0.0.1/mcp', name: 'everything' }]),
    );
    assert.equal(elsewhere.status, 400, elsewhere.text);
    assert.equal(elsewhere.json.code, 'mcp_server_url_refused');
    assert.equal(elsewhere.json.details?.field, 'mcp_servers[0].url');
    assert.equal(fx.upstream.modelCalls().length, seen);
  });

  test("a server named by its configured URL under the caller's own name: found, shown under that name", async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const answer = await messages(fx.gw.url, body(MODELS.chat, [{ type: 'url', url: fx.webUrl, name: 'my-web' }]));
    assert.equal(answer.status, 200, answer.text);
    const use = (answer.json.content as Json[])[0] as Json;
    assert.deepEqual([use.type, use.name, use.server_name], ['mcp_tool_use', 'echo', 'my-web']);
    assert.deepEqual(((answer.json.content as Json[])[1] as Json).content, [{ type: 'text', text: ECHO_OUTPUT }]);
  });

  test('tool_configuration.allowed_tools: only those are offered', async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const seen = fx.upstream.modelCalls().length;
    const answer = await messages(
      fx.gw.url,
      body(MODELS.chat, [{ ...server(), tool_configuration: { enabled: true, allowed_tools: ['echo'] } }]),
    );
    assert.equal(answer.status, 200, answer.text);
    const tools = fx.upstream.modelCalls()[seen]?.body?.tools as Json[];
    assert.deepEqual(
      tools.map((tool) => (tool.function as Json).name),
      [ECHO_FUNCTION],
    );
  });

  test('an Anthropic model with a public server: forwarded to Anthropic as it is', async () => {
    const seen = fx.upstream.requests.length;
    const servers = [{ type: 'url', url: 'https://mcp.example.com/sse', name: 'example' }];
    await messages(fx.gw.url, body(MODELS.anthropic, servers));
    const sent = fx.upstream.requests.slice(seen).find((r) => r.url.includes('/messages')) as ScriptedRequest;
    assert.ok(sent, 'the request went to the upstream /messages');
    assert.deepEqual(sent.body?.mcp_servers, servers);
    assert.equal(sent.headers['anthropic-beta'], 'mcp-client-2025-04-04');
  });

  test('through the official @anthropic-ai/sdk client (beta.messages, mcp-client-2025-04-04)', async () => {
    fx.upstream.setDecide(echoThenAnswer);
    const client = new Anthropic({ apiKey: ADMIN_TOKEN, baseURL: fx.gw.url });
    const message = await client.beta.messages.create({
      model: MODELS.gemini,
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Echo something, please.' }],
      mcp_servers: [{ type: 'url', url: `${fx.gw.url}/mcp/everything`, name: 'everything' }],
      betas: ['mcp-client-2025-04-04'],
    });
    const result = message.content.find((block) => block.type === 'mcp_tool_result');
    assert.deepEqual(result?.type === 'mcp_tool_result' ? result.content : undefined, [
      { type: 'text', text: ECHO_OUTPUT },
    ]);
    const stream = client.beta.messages.stream({
      model: MODELS.chat,
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Echo something, please.' }],
      mcp_servers: [{ type: 'url', url: `${fx.gw.url}/mcp/everything`, name: 'everything' }],
      betas: ['mcp-client-2025-04-04'],
    });
    const final = await stream.finalMessage();
    assert.deepEqual(
      final.content.map((block) => block.type),
      ['mcp_tool_use', 'mcp_tool_result', 'text'],
    );
  });
});
