/**
 * Tool-call limits as an MCP client meets them on `/mcp`: an admitted call's HTTP answer carries `RateLimit-*`; the
 * call past the caller's calls a minute is the JSON-RPC error `rate_limited` with its wait in
 * `data.details.retry_after_ms`, its HTTP answer `Retry-After` and `RateLimit-*`, and the record says `refused`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { authHeaders, startGateway, type TestGateway } from '../helpers/gateway.js';
import { EVERYTHING_SERVER } from '../helpers/mcp/everything-http.js';

describe('/mcp: limits on the HTTP answer and in the JSON-RPC error', () => {
  let gw: TestGateway;
  let key: string;

  before(async () => {
    gw = await startGateway({
      configFile: {
        name: 'gateway.yaml',
        text: `
mcp:
  caller_limits: { calls_per_minute: 2, concurrent: 4 }
mcp_servers:
  - name: everything
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(EVERYTHING_SERVER)}, stdio]
`,
      },
    });
    const created = await fetch(`${gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ name: 'limited', routes: ['mcp'], models: ['*'], mcp_tools: ['everything/*'] }),
    });
    key = ((await created.json()) as { key: string }).key;
  });

  after(async () => {
    await gw?.close();
  });

  const call = (id: number) =>
    fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'everything__echo', arguments: { message: `call ${id}` } },
      }),
    });

  test('two calls pass with RateLimit-*, the third is refused with Retry-After and retry_after_ms', async () => {
    const first = await call(1);
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('ratelimit-limit'), '2');
    assert.equal(first.headers.get('ratelimit-remaining'), '1');
    assert.deepEqual(((await first.json()) as { result: { content: unknown } }).result.content, [
      { type: 'text', text: 'Echo: call 1' },
    ]);
    const second = await call(2);
    assert.equal(second.headers.get('ratelimit-remaining'), '0');
    await second.body?.cancel();
    const third = await call(3);
    assert.equal(third.status, 200, 'a JSON-RPC error travels in a 200 answer');
    const retryAfter = Number(third.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    const body = (await third.json()) as {
      id: number;
      error: { code: number; data: { code: string; details: { limit: string; retry_after_ms: number } } };
    };
    assert.equal(body.id, 3);
    assert.equal(body.error.code, -32000);
    assert.equal(body.error.data.code, 'rate_limited');
    assert.equal(body.error.data.details.limit, 'mcp.caller.calls_per_minute');
    assert.ok(body.error.data.details.retry_after_ms >= 1000);
  });

  test("a key's own mcp_calls_per_minute replaces the config's for it (the other limit stays the config's)", async () => {
    const created = await fetch(`${gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({
        name: 'tight',
        routes: ['mcp'],
        models: ['*'],
        mcp_tools: ['everything/*'],
        limits: { mcp_calls_per_minute: 1 },
      }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    const view = (await created.json()) as { key: string; limits: Record<string, number> };
    assert.deepEqual(view.limits, { mcp_calls_per_minute: 1 });
    const own = (id: number) =>
      fetch(`${gw.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${view.key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'everything__echo', arguments: { message: 'x' } },
        }),
      });
    const first = await own(1);
    assert.equal(first.headers.get('ratelimit-limit'), '1');
    await first.body?.cancel();
    const second = (await (await own(2)).json()) as { error?: { data: { code: string; details: { limit: string } } } };
    assert.equal(second.error?.data.code, 'rate_limited');
    assert.equal(second.error?.data.details.limit, 'mcp.caller.calls_per_minute');
    const bad = await fetch(`${gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ name: 'bad', routes: ['mcp'], models: ['*'], limits: { mcp_concurrent: 0 } }),
    });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /mcp_concurrent/);
  });
});
