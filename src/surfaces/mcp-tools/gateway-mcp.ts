import type { ToolCaller } from '../../core/mcp/tool-service.js';
import { GatewayError, isGatewayError } from '../../errors/gateway-error.js';
import type { SurfaceCall } from '../surface.js';
import { toolCallerOf, type McpLoopDeps } from './mcp-deps.js';
import { McpToolLoop } from './mcp-loop.js';
import { planMcp } from './mcp-plan.js';
import type { McpServerSpec } from './tool-spec.js';

/** What to do with a request's MCP servers. */
export type McpPlan =
  /** The gateway runs their tools: the loop the call's turns go through. */
  | { kind: 'gateway'; loop: McpToolLoop }
  /** They are not servers of this gateway the caller may use: an upstream that speaks the API may call them itself. */
  | { kind: 'not_ours'; error: GatewayError }
  /** No MCP server named, or no MCP on this gateway (the translation refuses them as before). */
  | { kind: 'none' };

/** The refusals that say "not a server of this gateway": a natively served model's upstream may reach it. */
const NOT_OURS = new Set(['mcp_server_not_found', 'mcp_server_url_refused']);

/**
 * Plans the MCP servers a request names (`specs`, read by its surface): the servers found and their tools listed as
 * the caller (mcp-plan.ts), the loop made. A server that is not this gateway's (or not the caller's to use) is
 * `not_ours`, with the error a translated request gets; any other failure (a server that cannot be reached) is the
 * request's.
 */
export async function planGatewayMcp(
  specs: readonly McpServerSpec[],
  deps: McpLoopDeps | undefined,
  call: SurfaceCall,
  via: ToolCaller['via'],
): Promise<McpPlan> {
  if (specs.length === 0 || !deps) return { kind: 'none' };
  const caller = toolCallerOf(call, deps, via);
  try {
    const offer = await planMcp(specs, deps, caller, call.publicOrigin?.());
    return { kind: 'gateway', loop: new McpToolLoop(offer, deps.tools, caller, deps.config().maxLoopCalls) };
  } catch (error) {
    if (isGatewayError(error) && NOT_OURS.has(error.code)) return { kind: 'not_ours', error };
    throw error;
  }
}

/** Throws when one of the model's functions takes the name of an MCP tool's function (its calls could not be told apart). */
export function checkFunctionNames(loop: McpToolLoop, callerHas: (name: string) => boolean, field: string): void {
  for (const name of loop.offer.byFunction.keys())
    if (callerHas(name))
      throw new GatewayError('validation_failed', {
        field,
        problem: `a function named "${name.slice(0, 64)}" cannot be declared with the MCP tool of that name`,
      });
}
