// The MCP task: the client is given the gateway's `/mcp` as an MCP server named `gw`, and the mock model's first
// turn calls the real server's echo tool (@modelcontextprotocol/server-everything over stdio, configured in the
// conformance gateway's `mcp_servers` as `everything`) with the run's token as its message. Only that server
// answers `Echo: <token>`: that text in a tool result on the model's next turn proves the whole way — client →
// gateway /mcp → the real server → gateway → client → model. The clients name the tool their own way (Claude Code
// `mcp__gw__everything__echo`, Gemini CLI and Codex their own prefixes), so the mock finds it by its gateway name's
// ending and says which name it saw.
import type { DeclaredTool, Reply, Task } from './task.js';

/** The name the clients are told to give the gateway's MCP server. */
export const MCP_SERVER_NAME = 'gw';
/** The tool as the gateway's `/mcp` names it (`<server>__<tool>`). */
export const MCP_TOOL = 'everything__echo';
export const MCP_TASK_PROMPT = `Call the ${MCP_TOOL} tool of the ${MCP_SERVER_NAME} MCP server and tell me what it answered.`;

/** What the real server answers the task's call: its proof that the call reached it. */
export function mcpExpected(token: string): string {
  return `Echo: ${token}`;
}

/** The declared tool's name with its group, as the model would see it (`namespace.name` joined by `__`). */
function fullName(tool: DeclaredTool): string {
  return tool.namespace === undefined ? tool.name : `${tool.namespace}__${tool.name}`;
}

/**
 * Codex's code mode (its default model): the MCP tools are not declared to the model themselves but reached from the
 * JavaScript its freeform `exec` tool runs, as functions of the `tools` object named like the direct tools.
 */
function codeModeCall(tools: DeclaredTool[], task: Task): Reply | undefined {
  const exec = tools.find((tool) => /(^|[._-])exec$/.test(fullName(tool)));
  if (exec === undefined) return undefined;
  const source = `const result = await tools.mcp__${MCP_SERVER_NAME}__${MCP_TOOL}({ message: ${JSON.stringify(task.token)} });\ntext(JSON.stringify(result));\n`;
  if (exec.freeform === true) return { kind: 'tool', tool: exec, args: {}, input: source };
  const param = exec.stringParams?.length === 1 ? exec.stringParams[0] : 'input';
  return { kind: 'tool', tool: exec, args: { [param as string]: source } };
}

/** The first turn of the MCP task: a call of the echo tool (the token as its message), or why there is none. */
export function decideMcp(tools: DeclaredTool[], task: Task): Reply {
  const echo = tools.find((tool) => fullName(tool).endsWith(MCP_TOOL));
  if (echo !== undefined) return { kind: 'tool', tool: echo, args: { message: task.token } };
  const viaCode = codeModeCall(tools, task);
  if (viaCode !== undefined) return viaCode;
  const names = tools.map(fullName);
  return {
    kind: 'text',
    text: `The mock found no tool named …${MCP_TOOL} among the declared tools: ${names.join(', ').slice(0, 500)}`,
  };
}
