import { createHash } from 'node:crypto';

/**
 * The names tools are shown under where several servers' tools meet. On `/mcp`: `<server>__<tool>` (a server's
 * name holds no underscore, so the first `__` splits it back, and two servers' tools never collide); on
 * `/mcp/<server>`: the tool's own name. To a model (the gateway's tool loop): the same joined name when it fits the
 * providers' function-name rule (`^[a-zA-Z0-9_-]{1,64}$`), else its allowed characters cut to 55 and a digest of the
 * whole name — stable, so a prompt cache sees the same tools in the same words on every call.
 */
export const SERVER_SEPARATOR = '__';

export function joinedToolName(server: string, tool: string): string {
  return `${server}${SERVER_SEPARATOR}${tool}`;
}

/** `{server, tool}` of a joined name (undefined: not one). */
export function splitToolName(name: string): { server: string; tool: string } | undefined {
  const at = name.indexOf(SERVER_SEPARATOR);
  if (at <= 0 || at + SERVER_SEPARATOR.length >= name.length) return undefined;
  return { server: name.slice(0, at), tool: name.slice(at + SERVER_SEPARATOR.length) };
}

const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** The function name a model is offered for `tool` of `server` (providers' rule: letters, digits, _ and -, ≤ 64). */
export function modelFunctionName(server: string, tool: string): string {
  const joined = joinedToolName(server, tool);
  if (FUNCTION_NAME.test(joined)) return joined;
  const digest = createHash('sha256').update(joined).digest('hex').slice(0, 8);
  return `${joined.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 55)}_${digest}`;
}
