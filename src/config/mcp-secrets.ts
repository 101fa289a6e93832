import type { McpConfig } from './mcp-schema.js';

/**
 * Every secret value the MCP servers are connected with (the logger redacts them). A module of its own: the process
 * that reads the config (a cluster's primary) loads no zod, and mcp-schema.ts does.
 */
export function mcpSecrets(config: McpConfig): string[] {
  return config.servers.flatMap((server) => server.secrets);
}
