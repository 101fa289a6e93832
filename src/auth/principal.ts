import type { LimitSet } from '../config/types.js';
import type { McpLimits } from '../config/mcp-schema.js';
import type { Budget } from '../core/limits/rate-limit-service.js';
import { GatewayError } from '../errors/gateway-error.js';
import { compileToolRights, NO_TOOLS, type ToolRights } from '../core/mcp/tool-rights.js';

/** Who is calling and what they may do. `undefined` rights mean "everything" (the admin token). */
export interface Principal {
  /** The id limits, idempotency and events are kept under: `admin`, or `key:<key id>`. */
  caller: string;
  kind: 'admin' | 'key' | 'oauth' | 'basic';
  routes?: ReadonlySet<string>;
  models?: ReadonlySet<string>;
  /** The key's own per-caller limits (replacing the configured ones). */
  limits?: LimitSet;
  /** Tokens and/or cost per rolling period. */
  budget?: Budget;
  /**
   * The MCP tools it may list and call: patterns `<server>/<tool glob>` (core/mcp/tool-rights.ts); undefined: every
   * tool (the admin token); empty: none (a key given no `mcp_tools`).
   */
  mcpTools?: readonly string[];
  /** A key's own MCP tool-call limits (each set one replaces `mcp.caller_limits`' own). */
  mcpLimits?: McpLimits;
}

export const ADMIN: Principal = { caller: 'admin', kind: 'admin' };

const compiledRights = new WeakMap<Principal, ToolRights>();

/**
 * The MCP tools `principal` may see and call (compiled once per principal object): none without the `mcp` route,
 * whichever way the call comes (`/mcp`, or a model's tool loop).
 */
export function toolRightsOf(principal: Principal): ToolRights {
  let rights = compiledRights.get(principal);
  if (!rights) {
    const tools = principal.kind === 'admin' && !principal.mcpTools ? undefined : (principal.mcpTools ?? []);
    rights = principal.routes && !principal.routes.has('mcp') ? NO_TOOLS : compileToolRights(tools);
    compiledRights.set(principal, rights);
  }
  return rights;
}

/** A model id the principal may call (the id it used, or the model an alias stands for). */
export function modelAllowed(principal: Principal, ...ids: ReadonlyArray<string | undefined>): boolean {
  return principal.models === undefined || ids.some((id) => id !== undefined && principal.models?.has(id) === true);
}

/**
 * Model authorization, the body-time half of what the route guard checks before the body: 403 `model_not_allowed`
 * unless the principal may call the model it named (or the model that name is an alias of).
 */
export function authorizeModel(principal: Principal, requested: string, canonical: string): void {
  if (!modelAllowed(principal, requested, canonical)) {
    throw new GatewayError('model_not_allowed', { model: requested, allowed_models: [...(principal.models ?? [])] });
  }
}

/** A principal as JSON text (a batch keeps its owner's, to run its lines as the owner's calls later). */
export function principalSnapshot(principal: Principal): string {
  return JSON.stringify({
    caller: principal.caller,
    kind: principal.kind,
    ...(principal.routes ? { routes: [...principal.routes] } : {}),
    ...(principal.models ? { models: [...principal.models] } : {}),
    ...(principal.limits ? { limits: principal.limits } : {}),
    ...(principal.budget ? { budget: principal.budget } : {}),
    ...(principal.mcpTools ? { mcpTools: [...principal.mcpTools] } : {}),
  });
}

/** The principal `principalSnapshot` wrote (the gateway's own JSON). */
export function principalFromSnapshot(text: string): Principal {
  const saved = JSON.parse(text) as Omit<Principal, 'routes' | 'models'> & { routes?: string[]; models?: string[] };
  return {
    caller: saved.caller,
    kind: saved.kind,
    ...(saved.routes ? { routes: new Set(saved.routes) } : {}),
    ...(saved.models ? { models: new Set(saved.models) } : {}),
    ...(saved.limits ? { limits: saved.limits } : {}),
    ...(saved.budget ? { budget: saved.budget } : {}),
    ...(saved.mcpTools ? { mcpTools: saved.mcpTools } : {}),
  };
}
