/**
 * The gateway as an MCP server (`/mcp`, `/mcp/<server>`) in front of real MCP servers nobody here wrote
 * (@modelcontextprotocol/server-everything and server-filesystem over stdio) and one of our own over Streamable
 * HTTP (recording-mcp-server.ts: it records headers, cancellations and sessions), through the official SDK's client.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../helpers/gateway.js';
import { EVERYTHING_SERVER } from '../helpers/mcp/everything-http.js';
import { startRecordingMcpServer, type RecordingMcpServer } from '../helpers/mcp/recording-mcp-server.js';
import { waitFor } from '../helpers/wait.js';

const FILESYSTEM = join(process.cwd(), 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const SECRET = 'mcp-upstream-secret-0123456789abcdef';

function serversYaml(recording: RecordingMcpServer, folder: string, extra = ''): string {
  return `
mcp:
  max_argument_bytes: 2048
  max_result_bytes: 4096
mcp_servers:
  - name: everything
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(EVERYTHING_SERVER)}, stdio]
  - name: fs
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(FILESYSTEM)}, ${JSON.stringify(folder)}]
  - name: rec
    url: ${recording.url}
    call_timeout_seconds: 0.5
    headers:
      Authorization: { env: MCP_REC_TOKEN, prefix: "Bearer " }
      X-Team: blue
  - name: broken
    command: /nonexistent/mcp-server
    connect_timeout_seconds: 2
${extra}`;
}

async function connect(url: string, token = ADMIN_TOKEN): Promise<Client> {
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  return client;
}

function rpcData(error: unknown): { code: string; details: Record<string, unknown> } {
  assert.ok(error instanceof McpError, `an McpError, got ${String(error)}`);
  return error.data as { code: string; details: Record<string, unknown> };
}

describe('/mcp: the gateway as one MCP server over several', () => {
  let gw: TestGateway;
  let recording: RecordingMcpServer;
  let folder: string;
  let configPath: string;
  let client: Client;

  before(async () => {
    recording = await startRecordingMcpServer();
    folder = mkdtempSync(join(tmpdir(), 'mcp-fs-'));
    writeFileSync(join(folder, 'notes.txt'), 'the notes of the test\n');
    gw = await startGateway({
      env: { MCP_REC_TOKEN: SECRET },
      reloadable: true,
      configFile: { name: 'gateway.yaml', text: serversYaml(recording, folder) },
    });
    configPath = join(gw.dataDir, 'gateway.yaml');
    client = await connect(`${gw.url}/mcp`);
  });

  after(async () => {
    await client?.close();
    await gw?.close();
    await recording?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  test('tools/list joins every server as <server>__<tool>, sorted, the same on every call; a dead server is named', async () => {
    const first = await client.listTools();
    const names = first.tools.map((tool) => tool.name);
    assert.ok(names.includes('everything__echo'), names.join(' '));
    assert.ok(names.includes('fs__read_text_file'), names.join(' '));
    assert.ok(names.includes('rec__hang'), names.join(' '));
    assert.deepEqual(names, [...names].sort(), 'sorted by server, then tool');
    const again = await client.listTools();
    assert.deepEqual(
      again.tools.map((tool) => tool.name),
      names,
    );
    assert.ok(!names.some((name) => name.startsWith('broken__')));
    const unavailable = (first._meta as Record<string, unknown>)['llm-gateway/unavailable_servers'] as Array<{
      server: string;
      code: string;
    }>;
    assert.deepEqual(
      unavailable.map((u) => [u.server, u.code]),
      [['broken', 'mcp_server_unavailable']],
    );
    const echo = first.tools.find((tool) => tool.name === 'everything__echo');
    assert.equal(echo?.inputSchema.type, 'object', 'the server definition is passed on');
  });

  test('tools/call reaches the right server: stdio and Streamable HTTP, with the configured secret header', async () => {
    const echoed = await client.callTool({ name: 'everything__echo', arguments: { message: 'hello through' } });
    assert.deepEqual(echoed.content, [{ type: 'text', text: 'Echo: hello through' }]);
    const read = await client.callTool({
      name: 'fs__read_text_file',
      arguments: { path: join(folder, 'notes.txt') },
    });
    assert.match(JSON.stringify(read.content), /the notes of the test/);
    const rec = await client.callTool({ name: 'rec__echo', arguments: { message: 'over http' } });
    assert.deepEqual(rec.content, [{ type: 'text', text: 'Echo: over http' }]);
    const sent = recording.requests.at(-1)?.headers;
    assert.equal(sent?.authorization, `Bearer ${SECRET}`);
    assert.equal(sent?.['x-team'], 'blue');
  });

  test('a secret the server repeats back is scrubbed from the result', async () => {
    const answer = await client.callTool({ name: 'rec__repeat-header', arguments: {} });
    const text = JSON.stringify(answer.content);
    assert.ok(!text.includes(SECRET), text);
    assert.match(text, /\[REDACTED\]/);
  });

  test('/mcp/<server> serves one server under its tools own names', async () => {
    const fs = await connect(`${gw.url}/mcp/fs`);
    try {
      const names = (await fs.listTools()).tools.map((tool) => tool.name);
      assert.ok(names.includes('read_text_file'));
      assert.ok(!names.some((name) => name.includes('__')));
      const listed = await fs.callTool({ name: 'list_directory', arguments: { path: folder } });
      assert.match(JSON.stringify(listed.content), /notes\.txt/);
    } finally {
      await fs.close();
    }
    const missing = await fetch(`${gw.url}/mcp/nope`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(missing.status, 404);
    const body = (await missing.json()) as { code: string; details: { servers: string[] } };
    assert.equal(body.code, 'mcp_server_not_found');
    assert.deepEqual(body.details.servers, ['broken', 'everything', 'fs', 'rec']);
  });

  test('progress notifications of the upstream reach the client, each before the result', async () => {
    const answer = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: {
          name: 'everything__trigger-long-running-operation',
          arguments: { duration: 0.3, steps: 3 },
          _meta: { progressToken: 'tok-1' },
        },
      }),
    });
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type') ?? '', /text\/event-stream/);
    const events = (await answer.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as { method?: string; params?: { progress: number }; id?: number });
    assert.deepEqual(
      events.map((event) => event.method ?? `result ${event.id}`),
      ['notifications/progress', 'notifications/progress', 'notifications/progress', 'result 7'],
    );
    assert.deepEqual(
      events.slice(0, 3).map((event) => event.params?.progress),
      [1, 2, 3],
    );
    // Through the SDK's client too (it reads them as they come).
    const progress: number[] = [];
    await client.callTool(
      { name: 'everything__trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } },
      undefined,
      { onprogress: (p) => progress.push(p.progress) },
    );
    assert.deepEqual(progress, [1, 2, 3]);
  });

  test('a hung tool is cut at its timeout, and the upstream sees the cancellation', async () => {
    const before = recording.cancelled.length;
    const started = Date.now();
    const error = await client.callTool({ name: 'rec__hang', arguments: {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const data = rpcData(error);
    assert.equal(data.code, 'mcp_tool_timeout');
    assert.equal(data.details.timeout_ms, 500);
    assert.ok(Date.now() - started < 5_000);
    await waitFor('the upstream saw the cancellation', () => recording.cancelled.length > before);
  });

  test("the client's cancellation reaches the upstream", async () => {
    const before = recording.cancelled.length;
    const calls = recording.calls.length;
    const abort = new AbortController();
    const pending = client
      .callTool({ name: 'rec__hang', arguments: {} }, undefined, { signal: abort.signal, timeout: 60_000 })
      .then(
        () => 'answered',
        () => 'rejected',
      );
    await waitFor('the upstream runs the call', () => recording.calls.length > calls);
    abort.abort('the user pressed stop');
    assert.equal(await pending, 'rejected');
    await waitFor('the upstream saw the cancellation', () => recording.cancelled.length > before);
  });

  test('an upstream session that expired is re-established transparently', async () => {
    await client.callTool({ name: 'rec__echo', arguments: { message: 'one' } });
    const sessions = recording.sessions();
    recording.forgetSessions();
    const answer = await client.callTool({ name: 'rec__echo', arguments: { message: 'two' } });
    assert.deepEqual(answer.content, [{ type: 'text', text: 'Echo: two' }]);
    assert.equal(recording.sessions(), sessions + 1, 'one new session');
  });

  test('bounds: arguments and results past their size, a malformed name, a dead server', async () => {
    const big = await client
      .callTool({ name: 'everything__echo', arguments: { message: 'x'.repeat(3000) } })
      .then(() => undefined, rpcData);
    assert.equal(big?.code, 'mcp_arguments_too_large');
    assert.equal(big?.details.max_bytes, 2048);
    const huge = await client
      .callTool({ name: 'rec__big', arguments: { bytes: 10_000 } })
      .then(() => undefined, rpcData);
    assert.equal(huge?.code, 'mcp_upstream_error');
    const unnamed = await client.callTool({ name: 'echo', arguments: {} }).then(() => undefined, rpcData);
    assert.equal(unnamed?.code, 'validation_failed');
    const dead = await client.callTool({ name: 'broken__anything', arguments: {} }).then(() => undefined, rpcData);
    assert.equal(dead?.code, 'mcp_server_unavailable');
    assert.equal(typeof dead?.details.retry_after_ms, 'number');
  });

  test('prompts and resources are carried', async () => {
    const prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
    assert.ok(prompts.includes('everything__simple-prompt'), prompts.join(' '));
    const prompt = await client.getPrompt({ name: 'everything__simple-prompt' });
    assert.ok(prompt.messages.length > 0);
    const resources = (await client.listResources()).resources;
    assert.ok(resources.length > 0);
    const read = await client.readResource({ uri: (resources[0] as { uri: string }).uri });
    assert.equal(read.contents[0]?.uri, resources[0]?.uri);
  });

  test('without a credential: 401 with WWW-Authenticate; no secret in the answer', async () => {
    const answer = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(answer.status, 401);
    assert.match(answer.headers.get('www-authenticate') ?? '', /^Bearer /);
    assert.equal(((await answer.json()) as { code: string }).code, 'authentication_required');
  });

  test('a live reload adds a server: its tools appear and the GET stream says the list changed', async () => {
    const changes: string[] = [];
    const watcher = new Client({ name: 'watcher', version: '1' });
    watcher.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes.push('changed'));
    const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
    });
    await watcher.connect(transport);
    try {
      // The SDK client opens the GET stream after initialize; wait until the gateway holds it.
      await waitFor('the notification stream is open', () => gw.logLines.length > 0);
      writeFileSync(
        configPath,
        serversYaml(
          recording,
          folder,
          `  - name: second\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(EVERYTHING_SERVER)}, stdio]\n`,
        ),
      );
      await gw.gateway.reloadConfig('SIGHUP');
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      assert.ok(names.includes('second__echo'), names.join(' '));
      await waitFor('a tools/list_changed notification', () => changes.length > 0);
    } finally {
      await watcher.close();
    }
  });

  test('the logs hold no secret and no tool argument', () => {
    const logs = gw.logLines.join('\n');
    assert.ok(!logs.includes(SECRET));
    assert.ok(!logs.includes('hello through'));
  });
});
