/**
 * Upstream MCP servers over HTTP, the real @modelcontextprotocol/server-everything: its Streamable HTTP endpoint,
 * and its legacy SSE one reached through `transport: auto` (the Streamable HTTP initialize is refused with a 4xx,
 * the gateway falls back to SSE, as the spec says a client should). A server that dies is reconnected after its
 * backoff once it is back.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../helpers/gateway.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/mcp/everything-http.js';
import { waitForValue } from '../helpers/wait.js';

describe('upstream MCP servers over Streamable HTTP and legacy SSE', () => {
  let gw: TestGateway;
  let streamable: EverythingHttp;
  let sse: EverythingHttp;
  let client: Client;

  before(async () => {
    [streamable, sse] = await Promise.all([startEverythingHttp('streamableHttp'), startEverythingHttp('sse')]);
    gw = await startGateway({
      configFile: {
        name: 'gateway.yaml',
        text: `
mcp_servers:
  - name: web
    url: ${streamable.url}
    connect_timeout_seconds: 5
  - name: legacy
    url: ${sse.url}
    connect_timeout_seconds: 5
`,
      },
    });
    client = new Client({ name: 'test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
      }),
    );
  });

  after(async () => {
    await client?.close();
    await gw?.close();
    await Promise.all([streamable?.close(), sse?.close()]);
  });

  test('both are listed and called: Streamable HTTP, and SSE by the fallback', async () => {
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    assert.ok(names.includes('web__echo'), names.join(' '));
    assert.ok(names.includes('legacy__echo'), names.join(' '));
    const web = await client.callTool({ name: 'web__echo', arguments: { message: 'streamable' } });
    assert.deepEqual(web.content, [{ type: 'text', text: 'Echo: streamable' }]);
    const legacy = await client.callTool({ name: 'legacy__echo', arguments: { message: 'sse' } });
    assert.deepEqual(legacy.content, [{ type: 'text', text: 'Echo: sse' }]);
  });

  test('a server that died answers mcp_server_unavailable, and is reconnected once it is back', async () => {
    const port = streamable.port;
    await streamable.close();
    const failure = await client.callTool({ name: 'web__echo', arguments: { message: 'x' } }).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(failure instanceof McpError);
    assert.equal((failure.data as { code: string }).code, 'mcp_server_unavailable');
    streamable = await startEverythingHttp('streamableHttp', port);
    const answer = await waitForValue(
      'the server is reconnected after its backoff',
      () =>
        client.callTool({ name: 'web__echo', arguments: { message: 'back' } }).then(
          (result) => result.content,
          (error: unknown) => String(error),
        ),
      (content) => Array.isArray(content),
      40_000,
    );
    assert.deepEqual(answer, [{ type: 'text', text: 'Echo: back' }]);
  });
});
