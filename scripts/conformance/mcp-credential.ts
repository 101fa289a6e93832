// The credential the MCP clients send to the gateway's `/mcp`: a scoped key, as a user would be given one — route
// `mcp` and `mcp_tools: everything/*`, made with the gateway's own CLI (`gateway keys create`) in the run's data
// directory before the gateway starts. A build whose keys cannot carry `mcp_tools` yet lets such a key see no tool
// (a key sees none until given some): the probe then says so and the run uses the admin token, named in the row.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { join } from 'node:path';
import { runCommand } from './install.js';
import { MCP_TOOL } from './mcp-task.js';

/** The patterns the key is given: every tool of the one server the conformance gateway has. */
export const MCP_KEY_TOOLS = 'everything/*';

/** Makes the scoped key with the gateway's CLI (`env`: the gateway's own); undefined when the CLI refused. */
export async function createMcpKey(root: string, env: Record<string, string>): Promise<string | undefined> {
  const cli = [process.execPath, join(root, 'dist', 'cli', 'main.js')];
  const args = ['keys', 'create', '--name', 'conformance-mcp', '--models', '*', '--routes', 'mcp'];
  const result = await runCommand([...cli, ...args, '--mcp-tools', MCP_KEY_TOOLS], { env, timeoutMs: 30_000 });
  return result.code === 0 ? /^key: (\S+)$/m.exec(result.out)?.[1] : undefined;
}

/** The tool names a credential sees on `<origin>/mcp` (the SDK's client), or why it could not list them. */
export async function toolsSeen(origin: string, credential: string): Promise<string[] | string> {
  const client = new Client({ name: 'conformance-probe', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${credential}` } },
  });
  try {
    await client.connect(transport);
    return (await client.listTools(undefined, { timeout: 15_000 })).tools.map((tool) => tool.name);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await client.close().catch(() => undefined);
  }
}

export interface McpCredential {
  key: string;
  /** What the row says about it. */
  note: string;
}

/** The scoped key when it sees the task's tool; else the admin token, and why. */
export async function mcpCredential(origin: string, scoped: string | undefined, admin: string): Promise<McpCredential> {
  if (scoped === undefined) return { key: admin, note: '`gateway keys create --mcp-tools` refused: admin token' };
  const seen = await toolsSeen(origin, scoped);
  if (Array.isArray(seen) && seen.includes(MCP_TOOL))
    return { key: scoped, note: `key with route mcp, mcp_tools ${MCP_KEY_TOOLS}` };
  const why = Array.isArray(seen) ? `saw ${seen.length} tools` : `failed: ${seen.slice(0, 120)}`;
  return { key: admin, note: `admin token (a key with --mcp-tools ${MCP_KEY_TOOLS} ${why} on this build)` };
}
