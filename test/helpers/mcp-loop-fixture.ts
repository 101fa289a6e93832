/**
 * The MCP tool loop's fixture: the real `@modelcontextprotocol/server-everything` over stdio as the gateway's one MCP
 * server (`everything`), a scripted upstream that calls the offered `everything__echo` function and then answers
 * with what the tool said, and one gateway with a model on each upstream kind (OpenAI-compatible chat, Anthropic,
 * Gemini), plus a `kind: openai` one that speaks the Responses API natively (and Anthropic's Messages API natively:
 * `kind: anthropic` models are forwarded as they are on /v1/messages).
 */
import { after, before } from 'node:test';
import { resolve } from 'node:path';
import { startGateway, type TestGateway } from './gateway.js';
import { SCRIPT, startScriptedUpstream, type Decide, type ScriptedUpstream } from './upstreams/scripted.js';

/** The real MCP server, run by the gateway as a stdio child. */
export const EVERYTHING_SERVER = resolve('node_modules/@modelcontextprotocol/server-everything/dist/index.js');
/** The function the model is offered for the server's `echo` tool (mcp/tool-names.ts modelFunctionName). */
export const ECHO_FUNCTION = 'everything__echo';
export const ECHO_MESSAGE = 'hello from the model';
/** What the real server's echo tool answers. */
export const ECHO_OUTPUT = `Echo: ${ECHO_MESSAGE}`;
export const FINAL_TEXT = 'The server echoed it back.';

/** Calls the echo tool until its result is in the conversation, then answers. */
export const echoThenAnswer: Decide = (api, body) => {
  if (JSON.stringify(body).includes(ECHO_OUTPUT)) return { type: 'text', text: FINAL_TEXT };
  return {
    type: 'tool_call',
    id: SCRIPT.toolCallIds[api],
    name: ECHO_FUNCTION,
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

export const MODELS = { chat: 'chat-model', anthropic: 'claude-model', gemini: 'gemini-model' } as const;
export const NATIVE_MODEL = 'native-model';

export interface McpLoopFixture {
  readonly gw: TestGateway;
  readonly upstream: ScriptedUpstream;
}

/** The scripted upstream and the gateway, started and closed by the calling describe block's hooks. */
export function useMcpLoopGateway(mcpLines: readonly string[] = []): McpLoopFixture {
  let gw: TestGateway | undefined;
  let upstream: ScriptedUpstream | undefined;
  before(async () => {
    upstream = await startScriptedUpstream(echoThenAnswer);
    const origin = upstream.origin;
    gw = await startGateway({
      env: { MCP_UPSTREAM_KEY: 'sk-mcp-loop-0123456789' },
      configFile: {
        name: 'mcp-loop.yaml',
        text: [
          'upstreams:',
          `  - { name: compat, kind: openai-compatible, base_url: "${origin}/v1", api_key_env: MCP_UPSTREAM_KEY }`,
          `  - { name: claude, kind: anthropic, base_url: "${origin}/v1", api_key_env: MCP_UPSTREAM_KEY }`,
          `  - { name: google, kind: gemini, base_url: "${origin}/v1beta", api_key_env: MCP_UPSTREAM_KEY }`,
          `  - { name: oai, kind: openai, base_url: "${origin}/v1", api_key_env: MCP_UPSTREAM_KEY }`,
          'models:',
          `  - { id: ${MODELS.chat}, upstream: compat, upstream_model: m-chat }`,
          `  - { id: ${MODELS.anthropic}, upstream: claude, upstream_model: claude-haiku-4-5 }`,
          `  - { id: ${MODELS.gemini}, upstream: google, upstream_model: gemini-2.0-flash }`,
          `  - { id: ${NATIVE_MODEL}, upstream: oai, upstream_model: gpt-4o }`,
          'mcp_servers:',
          `  - { name: everything, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(EVERYTHING_SERVER)}, stdio] }`,
          ...mcpLines,
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
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
  };
}
