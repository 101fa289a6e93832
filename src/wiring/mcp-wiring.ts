import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import { McpServerContent } from '../core/mcp/server-content.js';
import { mountMcpRoutes } from '../routes/mcp/mcp-routes.js';
import type { McpConfig } from '../config/mcp-schema.js';
import type { GatewayConfig } from '../config/types.js';
import { McpToolService, type ToolCallLimiter, type ToolCallObserver } from '../core/mcp/tool-service.js';
import { UpstreamPool } from '../mcp/upstream-pool.js';

export interface WiredMcp {
  pool: UpstreamPool;
  /** Every tool call goes through it (`/mcp`, the Responses `mcp` tool, the Messages `mcp_servers`). */
  tools: McpToolService;
  /** The `mcp_servers` and `mcp` sections now (after the last reload). */
  settings(): McpConfig;
  /** A reload's `mcp_servers` and `mcp` (config-reload-wiring.ts). */
  apply(config: McpConfig): void;
}

/**
 * The MCP gateway's upstream servers and its one tool-call service (docs/mcp.md). Nothing connects at start: each
 * server on its first use. Their connections (stdio children included) end when the app closes.
 */
export function wireMcp(
  app: FastifyInstance,
  config: GatewayConfig,
  deps: { auth: Authenticator; limiter: ToolCallLimiter; observer: ToolCallObserver },
): WiredMcp {
  let settings = config.mcp;
  const pool = new UpstreamPool(settings, {
    warn: (message, fields) => app.log.warn(fields, message),
    debug: (message, fields) => app.log.debug(fields, message),
  });
  // The limiter and the records' observer come from tool-calls-wiring.ts (the limit store, or this process's).
  const tools = new McpToolService(pool, () => settings, deps.limiter, deps.observer);
  mountMcpRoutes(app, {
    auth: deps.auth,
    tools,
    content: new McpServerContent(pool),
    onToolsChanged: (listener) => pool.onToolsChanged(listener),
    hasServer: (server) => pool.has(server),
    environment: config.environment,
    version: config.version,
  });
  app.addHook('onClose', async () => {
    await pool.close();
  });
  return {
    pool,
    tools,
    settings: () => settings,
    apply(next) {
      settings = next;
      pool.apply(next);
    },
  };
}
