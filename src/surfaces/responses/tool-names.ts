import { createHash } from 'node:crypto';

/** What a chat function name stands for in the caller's Responses tools. */
export interface CallerTool {
  /** A `function` tool (its call is a `function_call` item) or a freeform `custom` one (a `custom_tool_call`). */
  kind: 'function' | 'custom';
  name: string;
  /** The `namespace` tool the function belongs to (Codex's `multi_agent_v1`), when it is in one. */
  namespace?: string;
}

/** What chat (and every provider behind it) accepts as a function name. */
export const CHAT_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Between a namespace and its tool's name in the flat chat name: `multi_agent_v1__wait_agent`. */
const SEPARATOR = '__';

/**
 * The namespace OpenAI's models see their plain functions in (`functions.exec`): Codex declares its code-mode tools
 * there. Its tools keep their own names upstream, where no other tool has them.
 */
const DEFAULT_NAMESPACE = 'functions';

const flatName = (namespace: string, name: string): string =>
  namespace === DEFAULT_NAMESPACE ? name : `${namespace}${SEPARATOR}${name}`;

/**
 * The names the caller's tools have upstream, and back. Chat knows neither namespaces nor freeform tools: a
 * namespaced function is declared as `<namespace>__<name>` and a custom tool as a function of its own name. The way
 * back is a lookup in this table, never a parse of the name, so any chat name maps to exactly the tool it was made
 * for: a flat name that is not a valid chat name (over 64 characters, a dot in a namespace) or that another tool
 * already has gets a hashed one instead (`<prefix>_<8 hex of SHA-256 of namespace and name>`), still unique.
 * One per call, built from the request's tools; earlier calls in `input` use the same table.
 */
export class ToolNames {
  private readonly byChat = new Map<string, CallerTool>();
  private readonly byCaller = new Map<string, string>();

  /**
   * Declares a caller tool and returns its chat name; undefined when a tool with this chat name but another
   * meaning was declared first (a function and a custom tool of one name), which chat cannot tell apart.
   */
  declare(tool: CallerTool): string | undefined {
    const key = callerKey(tool.namespace, tool.name);
    const known = this.byCaller.get(key);
    if (known !== undefined) return this.byChat.get(known)?.kind === tool.kind ? known : undefined;
    let chat = tool.namespace === undefined ? tool.name : flatName(tool.namespace, tool.name);
    if (tool.namespace !== undefined && (!CHAT_NAME.test(chat) || this.byChat.has(chat)))
      chat = hashedName(tool.namespace, tool.name);
    if (this.byChat.has(chat)) return undefined;
    this.byChat.set(chat, tool);
    this.byCaller.set(key, chat);
    return chat;
  }

  /** The chat name of a call in the conversation: its declared tool's, or (a tool no longer declared) a flat one. */
  chatName(name: string, namespace: string | undefined): string {
    const known = this.byCaller.get(callerKey(namespace, name));
    if (known !== undefined) return known;
    if (namespace === undefined) return name;
    const flat = flatName(namespace, name);
    return CHAT_NAME.test(flat) ? flat : hashedName(namespace, name);
  }

  /** The caller's tool a chat function name stands for (undefined: a name no declared tool has, shown as it came). */
  callerTool(chatName: string): CallerTool | undefined {
    return this.byChat.get(chatName);
  }
}

function callerKey(namespace: string | undefined, name: string): string {
  return namespace === undefined ? `\u0000${name}` : `${namespace}\u0000${name}`;
}

/** A valid, bounded chat name for a namespaced tool whose flat name is not one (or is taken). */
function hashedName(namespace: string, name: string): string {
  const hash = createHash('sha256').update(namespace).update('\u0000').update(name).digest('hex').slice(0, 8);
  const prefix = `${namespace}${SEPARATOR}${name}`.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 55);
  return `${prefix}_${hash}`;
}
