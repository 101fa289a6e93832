import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../../config/mcp-schema.js';
import type { ToolCaller } from '../../core/mcp/tool-service.js';
import type { ErrorCode } from '../../errors/codes.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { modelFunctionName } from '../../mcp/tool-names.js';
import type { ChatFunctionTool } from '../../wire/openai-chat.js';
import type { McpLoopDeps } from './mcp-deps.js';
import type { McpServerSpec } from './tool-spec.js';

/** One MCP tool as the model is offered it: a function, and the server and tool its calls go to. */
export interface OfferedTool {
  /** The function's name (mcp/tool-names.ts modelFunctionName: `<server>__<tool>`, or cut with a digest). */
  fn: string;
  /** The configured server. */
  server: string;
  /** The name the caller gave the server (shown on every item). */
  label: string;
  /** The server's definition of the tool. */
  tool: Tool;
  needsApproval: boolean;
}

/** The tools of one server the request named, as listed for it. */
export interface McpListing {
  label: string;
  server: string;
  tools: OfferedTool[];
}

/** What a request's MCP servers offer the model: the listings in the request's order, and the tools by function. */
export interface McpOffer {
  listings: McpListing[];
  byFunction: ReadonlyMap<string, OfferedTool>;
  /** The functions the model is offered, in a stable order (server, then tool name: prompt caches see the same list). */
  functions: ChatFunctionTool[];
}

/**
 * Finds the configured server each spec names and lists the tools the caller may call there. A spec names a server
 * by its name (`server_label`, `name`) or, on the Messages API (whose `url` is required), failing that by the
 * configured URL. A server's URL is its configured one, or its endpoint on this gateway (`<gatewayOrigin>/mcp/<name>`:
 * a stdio server has no other). A server the caller may not use is as unknown as one that does not exist (404
 * `mcp_server_not_found`, naming the field and the servers it may use); a URL that is not the named server's is
 * refused (400 `mcp_server_url_refused`: the gateway connects only where its config says). A server that cannot be
 * reached fails the request (its 502), never a tool list that is silently empty.
 */
export async function planMcp(
  specs: readonly McpServerSpec[],
  deps: McpLoopDeps,
  caller: ToolCaller,
  gatewayOrigin?: string,
): Promise<McpOffer> {
  const servers = deps.config().servers;
  const sameUrl = (url: string, server: McpServerConfig): boolean =>
    configuredUrl(url, server) || gatewayUrl(url, server, gatewayOrigin);
  const usable = deps.tools.servers(caller.rights);
  const seen = new Set<string>();
  const chosen = specs.map((spec) => {
    const server = serverOf(spec, servers, sameUrl);
    if (!server || !usable.includes(server.name))
      throw new GatewayError('mcp_server_not_found', {
        field: `${spec.at}.${spec.labelField}`,
        server: spec.label,
        servers: usable,
      });
    if (spec.url !== undefined && !sameUrl(spec.url, server))
      throw new GatewayError('mcp_server_url_refused', {
        field: `${spec.at}.${spec.labelField === 'name' ? 'url' : 'server_url'}`,
        server: server.name,
      });
    if (seen.has(server.name))
      throw new GatewayError('validation_failed', {
        field: `${spec.at}.${spec.labelField}`,
        problem: `the MCP server "${server.name}" is named twice`,
      });
    seen.add(server.name);
    return { spec, server: server.name };
  });
  const listed = await Promise.all(chosen.map(({ server }) => deps.tools.listTools(caller.rights, server)));
  const listings: McpListing[] = [];
  const byFunction = new Map<string, OfferedTool>();
  chosen.forEach(({ spec, server }, i) => {
    const listing = listed[i];
    const failed = listing?.unavailable[0];
    if (failed) throw new GatewayError(failed.code as ErrorCode, { field: `${spec.at}.${spec.labelField}`, server });
    const tools = (listing?.tools ?? [])
      .filter(({ tool }) => spec.allowed === undefined || spec.allowed.has(tool.name))
      .map(({ tool }): OfferedTool => {
        const offered = {
          fn: modelFunctionName(server, tool.name),
          server,
          label: spec.label,
          tool,
          needsApproval: spec.needsApproval(tool.name),
        };
        byFunction.set(offered.fn, offered);
        return offered;
      });
    listings.push({ label: spec.label, server, tools });
  });
  const functions = [...byFunction.values()]
    .sort((a, b) => (a.server + '\u0000' + a.tool.name < b.server + '\u0000' + b.tool.name ? -1 : 1))
    .map(functionOf);
  return { listings, byFunction, functions };
}

function serverOf(
  spec: McpServerSpec,
  servers: readonly McpServerConfig[],
  sameUrl: (url: string, server: McpServerConfig) => boolean,
): McpServerConfig | undefined {
  return (
    servers.find((server) => server.name === spec.label) ??
    (spec.url === undefined || !spec.byUrl ? undefined : servers.find((server) => sameUrl(spec.url as string, server)))
  );
}

/**
 * Whether `url` is the server's own endpoint on this gateway (`<origin>/mcp/<name>`): a stdio server has no URL, and
 * a client whose API wants one (Anthropic's `mcp_servers[].url`) names the gateway's.
 */
function gatewayUrl(url: string, server: McpServerConfig, origin: string | undefined): boolean {
  if (origin === undefined) return false;
  try {
    return new URL(url).href === new URL(`/mcp/${server.name}`, origin).href;
  } catch {
    return false;
  }
}

/** Whether `url` is the server's configured URL (compared parsed: `HTTP://Host/x` and `http://host/x` are one). */
function configuredUrl(url: string, server: McpServerConfig): boolean {
  if (server.connection.kind !== 'http') return false;
  try {
    return new URL(url).href === new URL(server.connection.url).href;
  } catch {
    return false;
  }
}

/** A tool as the function the model sees: its description and input schema as the server gave them. */
function functionOf(offered: OfferedTool): ChatFunctionTool {
  const { tool } = offered;
  const fn: ChatFunctionTool['function'] = { name: offered.fn, parameters: tool.inputSchema };
  const description = tool.description ?? tool.title;
  if (typeof description === 'string' && description !== '') fn.description = description;
  return { type: 'function', function: fn };
}
