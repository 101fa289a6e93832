/**
 * A caller that leaves while the gateway's tool loop runs an MCP tool cancels that call: the tool service is told
 * (the record says `cancelled`) and the server with it, as a model turn in flight would be.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { authHeaders } from '../../helpers/gateway.js';
import { callTool, MODELS, toolCallsOfRequest, useMcpLoopGateway } from '../../helpers/mcp-loop-fixture.js';

const fx = useMcpLoopGateway();

test('the caller leaving mid-call cancels the MCP tool call the loop is running', async () => {
  fx.upstream.setDecide(
    callTool('everything__trigger-long-running-operation', { duration: 30, steps: 30 }, 'never reached'),
  );
  const leave = new AbortController();
  const answer = await fetch(`${fx.gw.url}/v1/responses`, {
    method: 'POST',
    headers: authHeaders(),
    signal: leave.signal,
    body: JSON.stringify({
      model: MODELS.chat,
      input: 'Run the long operation.',
      tools: [{ type: 'mcp', server_label: 'everything', require_approval: 'never' }],
      stream: true,
      store: false,
    }),
  });
  assert.equal(answer.status, 200);
  const requestId = answer.headers.get('x-request-id');
  const reader = (answer.body as ReadableStream<Uint8Array>).getReader();
  let seen = '';
  while (!seen.includes('response.mcp_call.in_progress')) {
    const { value, done } = await reader.read();
    assert.ok(!done, 'the stream ended before the tool call started');
    seen += Buffer.from(value).toString('utf8');
  }
  const started = Date.now();
  leave.abort();
  const records = await toolCallsOfRequest(fx.gw, requestId, 15_000);

  assert.deepEqual(
    records.map((r) => [r.tool, r.via, r.outcome]),
    [['trigger-long-running-operation', 'responses', 'cancelled']],
  );
  assert.ok((records[0]?.durationMs ?? 0) < 20_000, 'ended long before the 30 s the tool would take');
  assert.ok(Date.now() - started < 15_000);
});
