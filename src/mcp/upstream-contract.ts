import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ZodType } from 'zod';

/**
 * The upstream MCP servers as the core sees them (docs/mcp.md): connections made with the official SDK
 * (upstream-server.ts), by name (upstream-pool.ts). Only core/mcp/tool-service.ts calls them: every tool call, whoever
 * asked, goes through it.
 */

/** One tool of one configured upstream server, as that server listed it. */
export interface UpstreamTool {
  /** The configured server's name (`mcp_servers[].name`). */
  server: string;
  /** The definition the server gave (its own `name`), untouched. */
  tool: Tool;
}

/** What a tool call is made with beyond its arguments. */
export interface ToolCallOptions {
  /** Aborts the call: the upstream is sent `notifications/cancelled` for it. */
  signal?: AbortSignal;
  /** Progress the upstream reports (MCP `notifications/progress`), passed on to whoever asked. */
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
}

/** The upstream servers, as the core sees them (src/mcp/upstream-pool.ts implements it). */
export interface McpUpstreams {
  /** The configured servers' names, in the config's order. */
  names(): readonly string[];
  has(server: string): boolean;
  /**
   * The server's tools (connecting first if it is not; its list is kept until the server says it changed). Throws
   * GatewayError `mcp_server_unavailable` when the server cannot be reached within its connect timeout.
   */
  listTools(server: string): Promise<readonly Tool[]>;
  /** Calls one tool; the server's own timeout and the caller's signal cut it (the upstream told to cancel). */
  callTool(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    options: ToolCallOptions,
  ): Promise<CallToolResult>;
  /** Any other request of the server (prompts, resources, completion), its result as the server sent it. */
  request<T>(
    server: string,
    method: string,
    params: Record<string, unknown> | undefined,
    schema: ZodType<T>,
    signal?: AbortSignal,
  ): Promise<T>;
  /** The secret values `server` is connected with (header values, a child's environment): scrubbed from answers. */
  secrets(server: string): string[];
  /** Tells `listener` the server's tool list changed (its `tools/list_changed`, a reconnect, a reload); returns an unsubscribe. */
  onToolsChanged(listener: (server: string) => void): () => void;
}
