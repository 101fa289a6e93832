import type { Principal } from '../../auth/principal.js';
import { toolRightsOf } from '../../auth/principal.js';
import type { McpConfig } from '../../config/mcp-schema.js';
import type { McpToolService, ToolCaller } from '../../core/mcp/tool-service.js';
import type { SurfaceCall } from '../surface.js';

/** What the surfaces need to run MCP tools for a model (the app's WiredMcp, wiring/mcp-wiring.ts). */
export interface McpLoopDeps {
  /** The one way every tool call goes: rights, limits, timeouts, records. */
  readonly tools: McpToolService;
  /** The `mcp_servers` and `mcp` sections now (a reload changes them). */
  config(): McpConfig;
  /** The gateway's environment (dev, staging, prod), on each call's record. */
  readonly environment: string;
}

/**
 * Who a model's MCP calls are made as: the caller of the request, with its tool rights (auth/principal.ts
 * toolRightsOf: none without the `mcp` route), its own limits (the admin token: none), the request's id, and the way
 * the calls came (`responses`, `messages`).
 */
export function toolCallerOf(call: SurfaceCall, deps: McpLoopDeps, via: ToolCaller['via']): ToolCaller {
  if (!call.principal) throw new Error('an MCP tool loop needs to know its caller (SurfaceCall.principal)');
  const principal: Principal = call.principal();
  return {
    caller: call.caller,
    environment: deps.environment,
    rights: toolRightsOf(principal),
    limits: principal.kind === 'admin' ? null : principal.mcpLimits,
    requestId: call.requestId ?? '',
    via,
  };
}
