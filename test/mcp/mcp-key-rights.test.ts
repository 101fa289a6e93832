/**
 * Per-key tool rights on `/mcp`, end to end: a key made through the admin keys API with the `mcp` right and
 * `mcp_tools: ['fs/read_*']` sees only the filesystem server's read tools (the others absent from tools/list, not
 * merely refused) and is refused every other tool with `mcp_tool_not_allowed`, whether or not it exists; a key
 * without the `mcp` right is refused the endpoint; a revoked key is refused at once.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { authHeaders, startGateway, type TestGateway } from '../helpers/gateway.js';
import { EVERYTHING_SERVER } from '../helpers/mcp/everything-http.js';

const FILESYSTEM = join(process.cwd(), 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');

async function createKey(gw: TestGateway, body: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const answer = await fetch(`${gw.url}/v1/?route=keys`, {
    method: 'POST',
    headers: authHeaders(),
    body: JSON.stringify({ name: 'mcp-test', models: ['*'], ...body }),
  });
  assert.equal(answer.status, 201, await answer.clone().text());
  return (await answer.json()) as { id: string; key: string };
}

async function connect(gw: TestGateway, key: string): Promise<Client> {
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return client;
}

function refusal(error: unknown): string | undefined {
  return error instanceof McpError ? (error.data as { code?: string } | undefined)?.code : String(error);
}

describe('/mcp with scoped keys: a key sees and calls only the tools its patterns name', () => {
  let gw: TestGateway;
  let folder: string;

  before(async () => {
    folder = mkdtempSync(join(tmpdir(), 'mcp-rights-'));
    writeFileSync(join(folder, 'plan.txt'), 'the plan\n');
    gw = await startGateway({
      configFile: {
        name: 'gateway.yaml',
        text: `
mcp_servers:
  - name: fs
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(FILESYSTEM)}, ${JSON.stringify(folder)}]
  - name: everything
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(EVERYTHING_SERVER)}, stdio]
`,
      },
    });
  });

  after(async () => {
    await gw?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  test('fs/read_* lists only the read tools and calls them; the rest is absent and refused', async () => {
    const { key } = await createKey(gw, { routes: ['mcp'], mcp_tools: ['fs/read_*'] });
    const client = await connect(gw, key);
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      assert.deepEqual(names, [
        'fs__read_file',
        'fs__read_media_file',
        'fs__read_multiple_files',
        'fs__read_text_file',
      ]);
      const read = await client.callTool({ name: 'fs__read_text_file', arguments: { path: join(folder, 'plan.txt') } });
      assert.match(JSON.stringify(read.content), /the plan/);
      for (const name of ['fs__write_file', 'everything__echo', 'fs__no_such_tool', 'nowhere__read_x']) {
        const error = await client.callTool({ name, arguments: { path: join(folder, 'x'), content: 'x' } }).then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.equal(refusal(error), 'mcp_tool_not_allowed', name);
      }
      // The refused write did not happen.
      assert.equal(existsSync(join(folder, 'x')), false);
      // Prompts of a server the key may not use are not shown either.
      const prompts = (await client.listPrompts()).prompts;
      assert.deepEqual(prompts, []);
    } finally {
      await client.close();
    }
  });

  test('a key given no mcp_tools sees no tool; one without the mcp right is refused the endpoint', async () => {
    const { key: bare } = await createKey(gw, { routes: ['mcp'] });
    const client = await connect(gw, bare);
    try {
      assert.deepEqual((await client.listTools()).tools, []);
    } finally {
      await client.close();
    }
    const { key: chatOnly } = await createKey(gw, { routes: ['chat'], mcp_tools: ['fs/*'] });
    const answer = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${chatOnly}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(answer.status, 403);
    const body = (await answer.json()) as { code: string; details: { allowed_routes: string[] } };
    assert.equal(body.code, 'route_not_allowed');
    assert.deepEqual(body.details.allowed_routes, ['chat']);
  });

  test('a revoked key is refused at once', async () => {
    const { id, key } = await createKey(gw, { routes: ['mcp'], mcp_tools: ['everything/echo'] });
    const client = await connect(gw, key);
    try {
      const echoed = await client.callTool({ name: 'everything__echo', arguments: { message: 'before' } });
      assert.deepEqual(echoed.content, [{ type: 'text', text: 'Echo: before' }]);
      const revoked = await fetch(`${gw.url}/v1/?route=keys&id=${id}`, { method: 'DELETE', headers: authHeaders() });
      assert.equal(revoked.status, 200);
      const error = await client.callTool({ name: 'everything__echo', arguments: { message: 'after' } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof Error);
      assert.match(String(error), /401|invalid_token|revoked|Unauthorized/i);
    } finally {
      await client.close().catch(() => undefined);
    }
  });
});
