import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ZodType } from 'zod';
import type { McpConfig } from '../config/mcp-schema.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { McpUpstreams, ToolCallOptions } from './upstream-contract.js';
import { UpstreamServer } from './upstream-server.js';

/**
 * The configured upstream MCP servers (`mcp_servers`), by name. Nothing connects until a server is first used. A
 * reload (`apply`) keeps a server whose connection settings did not change (its fingerprint), closes a removed or
 * changed one (a stdio child ends) and adds the new ones, each connected on its first use.
 */
export class UpstreamPool implements McpUpstreams {
  private servers = new Map<string, UpstreamServer>();
  private readonly listeners = new Set<(server: string) => void>();

  constructor(
    config: McpConfig,
    private readonly log: {
      warn(message: string, fields: Record<string, unknown>): void;
      debug(message: string, fields: Record<string, unknown>): void;
    },
  ) {
    this.apply(config);
  }

  /** Takes a reloaded config; returns the names of the servers closed (removed or changed). */
  apply(config: McpConfig): string[] {
    const next = new Map<string, UpstreamServer>();
    const closed: string[] = [];
    for (const server of config.servers) {
      const current = this.servers.get(server.name);
      if (current && current.config.fingerprint === server.fingerprint) next.set(server.name, current);
      else
        next.set(
          server.name,
          new UpstreamServer(server, config.maxResultBytes, {
            toolsChanged: (name) => this.changed(name),
            warn: (message, fields) => this.log.warn(message, fields),
            debug: (message, fields) => this.log.debug(message, fields),
          }),
        );
    }
    for (const [name, server] of this.servers)
      if (next.get(name) !== server) {
        closed.push(name);
        void server.close();
      }
    this.servers = next;
    for (const name of closed) this.changed(name);
    return closed;
  }

  names(): readonly string[] {
    return [...this.servers.keys()];
  }

  has(server: string): boolean {
    return this.servers.has(server);
  }

  /** The connection settings' secrets of `server` (scrubbed from what reaches a caller). */
  secrets(server: string): string[] {
    return this.servers.get(server)?.secrets() ?? [];
  }

  listTools(server: string): Promise<readonly Tool[]> {
    return this.server(server).listTools();
  }

  callTool(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    options: ToolCallOptions,
  ): Promise<CallToolResult> {
    return this.server(server).callTool(tool, args, options);
  }

  request<T>(
    server: string,
    method: string,
    params: Record<string, unknown> | undefined,
    schema: ZodType<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    return this.server(server).request(method, params, schema, signal);
  }

  onToolsChanged(listener: (server: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Closes every connection (the gateway's shutdown). */
  async close(): Promise<void> {
    const servers = [...this.servers.values()];
    this.servers = new Map();
    await Promise.all(servers.map((server) => server.close()));
  }

  private server(name: string): UpstreamServer {
    const server = this.servers.get(name);
    if (!server) throw new GatewayError('mcp_server_not_found', { server: name, servers: this.names() });
    return server;
  }

  private changed(server: string): void {
    for (const listener of this.listeners) listener(server);
  }
}
