import type { ProblemList } from '../../http/validation-details.js';
import { isJsonObject, type JsonObject } from '../../wire/json.js';

/** The most MCP servers one request may name (each is listed, and each of its tools offered to the model). */
export const MAX_MCP_SERVERS = 16;
/** The most names an allow list or an approval list may hold, and the most characters of each. */
const MAX_TOOL_NAMES = 256;
const MAX_NAME_CHARS = 128;

/** A caller's MCP server as one request names it (Responses `mcp` tool, Messages `mcp_servers` entry), read. */
export interface McpServerSpec {
  /** Where it is in the request (`tools[2]`, `mcp_servers[0]`): errors name `<at>.<field>`. */
  at: string;
  /** The field that names the server (`server_label`, `name`). */
  labelField: string;
  /** The name the caller gave it, shown back on every item (`server_label`, `server_name`). */
  label: string;
  /** The URL the caller said the server is at (undefined: none; the configured server's own is used). */
  url: string | undefined;
  /** Whether a configured server may be found by its URL when no server has the label's name (Messages). */
  byUrl: boolean;
  /** The only tools offered (undefined: all the caller may call). */
  allowed: ReadonlySet<string> | undefined;
  /** Whether a call of `tool` waits for the caller's approval before it runs. */
  needsApproval(tool: string): boolean;
}

/**
 * A Responses API `mcp` tool (`{type: "mcp", server_label, server_url?, allowed_tools?, require_approval?, headers?,
 * server_description?}`). `allowed_tools` is a list of names or `{tool_names}` (a `read_only` filter is refused: the
 * gateway cannot tell a read-only tool). `require_approval` is `"always"`, `"never"` or `{always: {tool_names},
 * never: {tool_names}}`, OpenAI's default being approval for every call; a tool named in neither list of the object
 * form needs approval. `headers` and `server_description` are read past: the configured server is called with its
 * own credentials (docs/mcp.md).
 */
export function readResponsesMcpTool(tool: JsonObject, at: string, problems: ProblemList): McpServerSpec | undefined {
  const label = tool.server_label;
  if (typeof label !== 'string' || label === '' || label.length > MAX_NAME_CHARS) {
    problems.add({ field: `${at}.server_label`, problem: `must be a string of 1 to ${MAX_NAME_CHARS} characters` });
    return undefined;
  }
  const url = optionalUrl(tool.server_url, `${at}.server_url`, problems);
  const filter = isJsonObject(tool.allowed_tools) ? tool.allowed_tools : undefined;
  if (filter?.read_only !== undefined && filter.read_only !== null)
    problems.add({
      field: `${at}.allowed_tools.read_only`,
      problem: 'is not supported on a translated upstream: name the tools in tool_names',
    });
  const allowed = nameList(filter ? filter.tool_names : tool.allowed_tools, `${at}.allowed_tools`, problems);
  const needsApproval = approvalRule(tool.require_approval, `${at}.require_approval`, problems);
  if (url === null || allowed === null || !needsApproval) return undefined;
  return { at, labelField: 'server_label', label, url, byUrl: false, allowed, needsApproval };
}

/**
 * One entry of a Messages API `mcp_servers` (`{type: "url", url, name, authorization_token?, tool_configuration?:
 * {enabled, allowed_tools}}`, Anthropic's beta `mcp-client-2025-04-04`). Its calls never wait for an approval (the
 * Messages API has none); `authorization_token` is read past (the configured server's own credentials are used).
 */
export function readMessagesMcpServer(entry: unknown, at: string, problems: ProblemList): McpServerSpec | undefined {
  if (!isJsonObject(entry) || (entry.type !== undefined && entry.type !== 'url')) {
    problems.add({ field: `${at}.type`, problem: 'must be an object of type "url"', allowed: ['url'] });
    return undefined;
  }
  const name = entry.name;
  if (typeof name !== 'string' || name === '' || name.length > MAX_NAME_CHARS) {
    problems.add({ field: `${at}.name`, problem: `must be a string of 1 to ${MAX_NAME_CHARS} characters` });
    return undefined;
  }
  const url = optionalUrl(entry.url, `${at}.url`, problems);
  const config = isJsonObject(entry.tool_configuration) ? entry.tool_configuration : undefined;
  const enabled = config?.enabled !== false;
  const listed = nameList(config?.allowed_tools, `${at}.tool_configuration.allowed_tools`, problems);
  if (url === null || listed === null) return undefined;
  const allowed = enabled ? listed : new Set<string>();
  return { at, labelField: 'name', label: name, url, byUrl: true, allowed, needsApproval: () => false };
}

/** A URL field: undefined when absent, null (and a problem) when it is not a string URL. */
function optionalUrl(value: unknown, field: string, problems: ProblemList): string | undefined | null {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' && value.length <= 2048 && URL.canParse(value)) return value;
  problems.add({ field, problem: 'must be an absolute URL of at most 2048 characters' });
  return null;
}

/** A list of tool names: undefined when absent, null (and a problem) when malformed. */
function nameList(value: unknown, field: string, problems: ProblemList): ReadonlySet<string> | undefined | null {
  if (value === undefined || value === null) return undefined;
  if (
    Array.isArray(value) &&
    value.length <= MAX_TOOL_NAMES &&
    value.every((name) => typeof name === 'string' && name !== '' && name.length <= MAX_NAME_CHARS)
  )
    return new Set(value as string[]);
  problems.add({ field, problem: `must be a list of at most ${MAX_TOOL_NAMES} tool names` });
  return null;
}

/** `require_approval` as a rule (OpenAI's default: every call is approved first); undefined when malformed. */
function approvalRule(value: unknown, field: string, problems: ProblemList): ((tool: string) => boolean) | undefined {
  if (value === undefined || value === null || value === 'always') return () => true;
  if (value === 'never') return () => false;
  if (isJsonObject(value)) {
    const listOf = (key: 'always' | 'never'): ReadonlySet<string> | null => {
      const part = value[key];
      if (part === undefined || part === null) return new Set();
      if (isJsonObject(part) && part.read_only !== undefined && part.read_only !== null) {
        problems.add({ field: `${field}.${key}.read_only`, problem: 'is not supported on a translated upstream' });
        return null;
      }
      return nameList(isJsonObject(part) ? part.tool_names : part, `${field}.${key}.tool_names`, problems) ?? new Set();
    };
    const always = listOf('always');
    const never = listOf('never');
    if (always === null || never === null) return undefined;
    return (tool) => always.has(tool) || !never.has(tool);
  }
  problems.add({
    field,
    problem: 'must be "always", "never" or {always: {tool_names}, never: {tool_names}}',
    allowed: ['always', 'never'],
  });
  return undefined;
}
