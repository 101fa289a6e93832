// The one-tool task every mock upstream plays, whatever API it is asked in: turn 1 asks for a tool call that reads
// the task's file, turn 2 (once a tool result is in the conversation) answers with a text that quotes the result.
// The file holds a random token that appears nowhere else: the token in the client's final answer proves the whole
// loop (the call reached the client, the client ran the tool, the result reached the upstream, the answer came back).
// A mock with no task set plays a model's part instead (model-part.ts), for the Open Responses compliance suite.
import type { Conversation } from './conversation.js';
import { decideMcp } from './mcp-task.js';

/** What one run's task is: where the file is and the token in it. */
export interface Task {
  /** The directory the client runs in (its cwd); the file is `TASK_FILE` there. */
  workDir: string;
  token: string;
  /** The MCP task instead (mcp-task.ts): the first turn calls the gateway's `everything__echo` with the token. */
  mcp?: boolean;
}

export const TASK_FILE = 'conformance.txt';
export const TASK_PROMPT = `Read the file ${TASK_FILE} in the current directory and tell me what it says.`;

/** A tool the caller declared, as much of it as the mock needs to call it. */
export interface DeclaredTool {
  name: string;
  /** Its group, for a Responses `namespace` tool group. */
  namespace?: string;
  /** A Responses `custom` (freeform) tool: called with a raw `input` string, not JSON arguments. */
  freeform?: boolean;
  /** The names of the string properties of its parameters' schema (where a freeform tool's text goes once translated). */
  stringParams?: string[];
}

/** What the mock reads of a request, whatever its API. */
export interface ParsedTurn {
  /** The system text, the user's texts and images (what the model part reads: model-part.ts). */
  conversation: Conversation;
  model: string;
  stream: boolean;
  tools: DeclaredTool[];
  /** The text of every tool result in the conversation, oldest first. */
  toolResults: string[];
  /**
   * The request asks for a JSON answer, in its API's own way (chat `response_format`, Responses `text.format`,
   * Anthropic `output_config.format`, Gemini `responseMimeType`): a model so asked answers JSON (jsonReply).
   */
  jsonAsked: boolean;
}

/**
 * The text a model asked for JSON answers: a JSON object, whatever its schema wants (Gemini CLI's model router asks
 * for one and retries, for minutes, an answer that does not parse). A tool call stays as it is.
 */
export function jsonReply(reply: Reply, turn: ParsedTurn): Reply {
  if (reply.kind !== 'text' || !turn.jsonAsked) return reply;
  const answer = {
    reasoning: 'simple',
    complexity_reasoning: 'simple',
    complexity_score: 1,
    model_choice: 'flash',
    next_speaker: 'user',
  };
  return { kind: 'text', text: JSON.stringify(answer) };
}

/**
 * What the mock answers: a tool call (JSON arguments, or a freeform tool's `input` text; `callId`, the call's id, set
 * by the mock so that a recording can name it), or a final text.
 */
export type Reply =
  | { kind: 'tool'; tool: DeclaredTool; args: Record<string, unknown>; input?: string; callId?: string }
  | { kind: 'text'; text: string };

type ToolCall = { args: Record<string, unknown>; input?: string };

/**
 * The JavaScript Codex's code mode runs for the task: its `exec` tool (a freeform tool in the `functions` namespace,
 * declared in an `additional_tools` input item on Codex's default model) runs JavaScript whose `tools` object holds
 * the nested tools, `exec_command` among them; `text()` is what the call returns.
 */
const CODE_MODE_SOURCE = `const result = await tools.exec_command({ cmd: "cat ${TASK_FILE}" });\ntext(result.output);\n`;

/** A freeform tool's text as a call: `input` on a Responses custom tool, else its one string parameter once translated. */
function freeform(tool: DeclaredTool, text: string): ToolCall {
  if (tool.freeform === true) return { args: {}, input: text };
  const param = tool.stringParams?.length === 1 ? tool.stringParams[0] : 'input';
  return { args: { [param as string]: text } };
}

/**
 * The file-reading tools of the clients, in order of preference, and the call that reads the task's file.
 * Claude Code: `Read` (read-only: allowed without asking on its default permission mode; Bash would need a grant).
 * Codex 0.169 on a model its catalog marks for plain tools: `exec_command` (its shell, `cmd` run in the cwd); older
 * Codex: `shell` (argv); on its default model (code mode): `exec`, JavaScript that calls `tools.exec_command`.
 * Gemini CLI: `read_file`. A translated tool may carry its namespace in its name (`functions__exec`), hence the suffix.
 */
const TOOL_PLANS: ReadonlyArray<{
  matches: (name: string) => boolean;
  call: (task: Task, tool: DeclaredTool) => ToolCall;
}> = [
  { matches: (name) => name === 'Read', call: (task) => ({ args: { file_path: `${task.workDir}/${TASK_FILE}` } }) },
  {
    matches: (name) => name === 'read_file',
    call: (task) => ({ args: { file_path: `${task.workDir}/${TASK_FILE}` } }),
  },
  { matches: (name) => name === 'exec_command', call: () => ({ args: { cmd: `cat ${TASK_FILE}` } }) },
  { matches: (name) => name === 'shell', call: () => ({ args: { command: ['cat', TASK_FILE] } }) },
  {
    matches: (name) => name === 'Bash',
    call: () => ({ args: { command: `cat ${TASK_FILE}`, description: 'Read the task file' } }),
  },
  { matches: (name) => name === 'run_shell_command', call: () => ({ args: { command: `cat ${TASK_FILE}` } }) },
  { matches: (name) => /(^|[._-])exec$/.test(name), call: (_task, tool) => freeform(tool, CODE_MODE_SOURCE) },
];

/** The longest piece of a tool result quoted back (the token is 30 characters; a result is usually short). */
const QUOTE_LIMIT = 2_000;

/**
 * The answer to one request of the agent loop. No tools declared: a side request (a title, a classifier), answered
 * with a short text. A tool result already in the conversation: the final answer, quoting it.
 */
export function decide(tools: DeclaredTool[], toolResults: string[], task: Task): Reply {
  if (toolResults.length > 0) {
    const quoted = toolResults.join('\n').trim().slice(0, QUOTE_LIMIT);
    return { kind: 'text', text: `The tool said: ${quoted}` };
  }
  if (tools.length === 0) return { kind: 'text', text: 'OK' };
  if (task.mcp === true) return decideMcp(tools, task);
  for (const plan of TOOL_PLANS) {
    const tool = tools.find((declared) => plan.matches(declared.name));
    if (tool !== undefined) return { kind: 'tool', tool, ...plan.call(task, tool) };
  }
  const names = tools.map((tool) => (tool.namespace ? `${tool.namespace}.${tool.name}` : tool.name));
  return { kind: 'text', text: `The mock knows none of the declared tools: ${names.join(', ').slice(0, 500)}` };
}

/** An OpenAI `response_format` / `text.format` type that asks for JSON. */
export function isJsonFormat(type: unknown): boolean {
  return type === 'json_object' || type === 'json_schema';
}

/** The names of the string properties of a JSON schema object. */
export function stringParamsOf(schema: unknown): string[] {
  const properties = asRecord(asRecord(schema).properties);
  return Object.keys(properties).filter((key) => asRecord(properties[key]).type === 'string');
}

/** The text of a tool result given as a string, or as a list of text parts/blocks (`{type, text}`). */
export function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(textOf).join('\n');
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    // A text part, or a Gemini functionResponse's `response` ({output} from Gemini CLI, {content} from a translation).
    for (const key of ['text', 'output', 'content']) if (typeof record[key] === 'string') return record[key];
    return JSON.stringify(value);
  }
  return value === undefined ? '' : String(value);
}

export function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

export function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
