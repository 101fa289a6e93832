import { GatewayError } from '../../errors/gateway-error.js';
import { ProblemList } from '../../http/validation-details.js';
import { modelFunctionName } from '../../mcp/tool-names.js';
import type { ChatRequestBody } from '../../providers/provider-contract.js';
import { checkFunctionNames, planGatewayMcp } from '../mcp-tools/gateway-mcp.js';
import type { McpLoopDeps } from '../mcp-tools/mcp-deps.js';
import type { McpToolLoop } from '../mcp-tools/mcp-loop.js';
import { MAX_MCP_SERVERS, readMessagesMcpServer, type McpServerSpec } from '../mcp-tools/tool-spec.js';
import type { SurfaceCall } from '../surface.js';
import type { MessagesRequest } from './request-to-chat.js';

/**
 * The loop that runs a translated Messages request's `mcp_servers` (Anthropic's MCP connector): each entry must name
 * a configured server the caller may use, by `name` or by the configured `url` (404 `mcp_server_not_found`; a `url`
 * that is not the named server's: 400 `mcp_server_url_refused`). Undefined when the request names none, or when
 * this gateway runs no MCP servers (the translation refuses the field as before). For a model served by Anthropic
 * (`native`), servers that are not all this gateway's are Anthropic's to call: `native`, forwarded as they are.
 */
export async function planMessagesMcp(
  request: MessagesRequest,
  deps: McpLoopDeps | undefined,
  call: SurfaceCall,
  native: boolean,
): Promise<McpToolLoop | 'native' | undefined> {
  const servers: unknown = request.mcp_servers;
  if (!deps || servers === undefined || servers === null) return native ? 'native' : undefined;
  const problems = new ProblemList();
  const specs: McpServerSpec[] = [];
  if (!Array.isArray(servers) || servers.length > MAX_MCP_SERVERS)
    problems.add({ field: 'mcp_servers', problem: `must be a list of at most ${MAX_MCP_SERVERS} servers` });
  else
    servers.forEach((entry: unknown, i) => {
      const spec = readMessagesMcpServer(entry, `mcp_servers[${i}]`, problems);
      if (spec) specs.push(spec);
    });
  if (!problems.empty) {
    if (native) return 'native';
    throw new GatewayError('validation_failed', problems.details());
  }
  const plan = await planGatewayMcp(specs, deps, call, 'messages');
  if (plan.kind === 'not_ours') {
    if (native) return 'native';
    throw plan.error;
  }
  return plan.kind === 'gateway' ? plan.loop : undefined;
}

/** The request without `mcp_servers` (the loop runs them: the translation has nothing left to refuse). */
export function withoutMcpServers(request: MessagesRequest): MessagesRequest {
  const { mcp_servers: _servers, ...rest } = request;
  return rest as MessagesRequest;
}

/** The function an MCP tool of an earlier turn is, by the server's name as the caller gave it. */
export function mcpFunctionOf(loop: McpToolLoop): (server: string, tool: string) => string {
  const servers = new Map(loop.offer.listings.map((listing) => [listing.label, listing.server]));
  return (server, tool) => modelFunctionName(servers.get(server) ?? server, tool);
}

/** The chat request offered the MCP tools' functions, its calls run by `loop`. */
export function offerMcp(chat: ChatRequestBody, call: SurfaceCall, loop: McpToolLoop): void {
  const declared = new Set((chat.tools ?? []).map((tool) => (tool as { function?: { name?: string } }).function?.name));
  checkFunctionNames(loop, (name) => declared.has(name), 'tools');
  chat.tools = [...(chat.tools ?? []), ...loop.offer.functions];
  call.loop = loop;
}
