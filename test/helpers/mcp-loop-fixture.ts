/**
 * The MCP tool loop's fixture: the real `@modelcontextprotocol/server-everything` over stdio as the gateway's one MCP
 * server (`everything`), a scripted upstream that calls the offered `everything__echo` function and then answers
 * with what the tool said, and one gateway with a model on each upstream kind (OpenAI-compatible chat, Anthropic,
 * Gemini), plus a `kind: openai` one that speaks the Responses API natively (and Anthropic's Messages API natively:
 * `kind: anthropic` models are forwarded as they are on /v1/messages). The same server over Streamable HTTP, its own
 * process, is the gateway's second server (`web`), for the cases that name a server by its URL.
 */
import { after, before } from 'node:test';
import { SqliteToolCallStore } from '../../src/store/sqlite/sqlite-tool-calls.js';
import type { StoredToolCall } from '../../src/store/tool-call-contract.js';
import { startGateway, type TestGateway } from './gateway.js';
import { EVERYTHING_SERVER, startEverythingHttp, type EverythingHttp } from './mcp/everything-http.js';
import { SCRIPT, startScriptedUpstream, type Decide, type ScriptedUpstream } from './upstreams/scripted.js';
import { everyKindConfig } from './upstreams/scripted-kinds.js';
import { waitForValue } from './wait.js';
/** The function the model is offered for the server's `echo` tool (mcp/tool-names.ts modelFunctionName). */
export const ECHO_FUNCTION = 'everything__echo';
export const ECHO_MESSAGE = 'hello from the model';
/** What the real server's echo tool answers. */
export const ECHO_OUTPUT = `Echo: ${ECHO_MESSAGE}`;
export const FINAL_TEXT = 'The server echoed it back.';

/** Calls the echo tool it is offered (`<server>__echo`) until its result is in the conversation, then answers. */
export const echoThenAnswer: Decide = (api, body) => {
  const text = JSON.stringify(body);
  if (text.includes(ECHO_OUTPUT)) return { type: 'text', text: FINAL_TEXT };
  return {
    type: 'tool_call',
    id: SCRIPT.toolCallIds[api],
    name: /"([a-z0-9-]+__echo)"/.exec(text)?.[1] ?? ECHO_FUNCTION,
    arguments: JSON.stringify({ message: ECHO_MESSAGE }),
  };
};

/** A model that never stops calling the tool. */
export const echoForever: Decide = (api) => ({
  type: 'tool_call',
  id: SCRIPT.toolCallIds[api],
  name: ECHO_FUNCTION,
  arguments: JSON.stringify({ message: 'again' }),
});

/** A model that calls a tool that fails (server-everything's `trigger-long-running-operation` cut by the timeout). */
export function callTool(name: string, args: Record<string, unknown>, answer: string): Decide {
  return (api, body) => {
    if (
      JSON.stringify(body).includes('"role":"tool"') ||
      JSON.stringify(body).includes('tool_result') ||
      JSON.stringify(body).includes('functionResponse')
    )
      return { type: 'text', text: answer };
    return { type: 'tool_call', id: SCRIPT.toolCallIds[api], name, arguments: JSON.stringify(args) };
  };
}

export { MODELS, NATIVE_MODEL } from './upstreams/scripted-kinds.js';

export interface McpLoopFixture {
  readonly gw: TestGateway;
  readonly upstream: ScriptedUpstream;
  /** The `web` server's URL (server-everything over Streamable HTTP). */
  readonly webUrl: string;
}

/** The scripted upstream and the gateway, started and closed by the calling describe block's hooks. */
export function useMcpLoopGateway(mcpLines: readonly string[] = []): McpLoopFixture {
  let gw: TestGateway | undefined;
  let upstream: ScriptedUpstream | undefined;
  let web: EverythingHttp | undefined;
  before(async () => {
    upstream = await startScriptedUpstream(echoThenAnswer);
    web = await startEverythingHttp('streamableHttp');
    const origin = upstream.origin;
    gw = await startGateway({
      env: { MCP_UPSTREAM_KEY: 'sk-mcp-loop-0123456789' },
      configFile: {
        name: 'mcp-loop.yaml',
        text: [
          ...everyKindConfig(origin, 'MCP_UPSTREAM_KEY'),
          'mcp_servers:',
          `  - { name: everything, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(EVERYTHING_SERVER)}, stdio] }`,
          `  - { name: web, url: ${JSON.stringify(web.url)} }`,
          ...mcpLines,
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    await web?.close();
  });
  return {
    get gw() {
      if (!gw) throw new Error('the gateway is not started');
      return gw;
    },
    get upstream() {
      if (!upstream) throw new Error('the upstream is not started');
      return upstream;
    },
    get webUrl() {
      if (!web) throw new Error('the web server is not started');
      return web.url;
    },
  };
}

/** The tool-call records of one request, once there is one (records are written in batches, off the call's path). */
export function toolCallsOfRequest(
  gw: TestGateway,
  requestId: string | null,
  timeoutMs?: number,
): Promise<StoredToolCall[]> {
  const store = new SqliteToolCallStore(gw.store.db);
  return waitForValue(
    'the tool call record',
    async () => (await store.recentToolCalls(50)).filter((r) => r.requestId === requestId),
    (found) => found.length > 0,
    timeoutMs,
  );
}
