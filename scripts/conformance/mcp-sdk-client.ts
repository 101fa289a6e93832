// The MCP SDK's own client as a conformance client: `mcp-sdk-client.ts <server URL> <message>`, the credential in
// MCP_BEARER_TOKEN. It connects over Streamable HTTP, lists the tools, calls `everything__echo` with the message and
// prints what it got, one line each (`tools: ...`, `result: {...}`); exit 0 only when both answered.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MCP_TOOL } from './mcp-task.js';

async function main(): Promise<number> {
  const [url, message] = process.argv.slice(2);
  const token = process.env.MCP_BEARER_TOKEN;
  if (url === undefined || message === undefined || token === undefined) {
    process.stderr.write('usage: MCP_BEARER_TOKEN=... mcp-sdk-client.ts <server URL> <message>\n');
    return 2;
  }
  const client = new Client({ name: 'llm-gateway-conformance', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    process.stdout.write(`tools: ${tools.map((tool) => tool.name).join(', ')}\n`);
    const result = await client.callTool({ name: MCP_TOOL, arguments: { message } });
    process.stdout.write(`result: ${JSON.stringify(result)}\n`);
    return result.isError === true ? 1 : 0;
  } finally {
    await client.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`mcp-sdk-client: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
