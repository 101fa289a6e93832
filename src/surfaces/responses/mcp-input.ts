import type { ProblemList } from '../../http/validation-details.js';
import type { ChatMessage, ToolCall } from '../../providers/provider-contract.js';
import type { ResponsesInputItem } from '../../wire/openai-responses.js';
import { mcpCallMessages, mcpChatCall } from './chat-to-response.js';
import type { ApprovalAnswer } from '../mcp-tools/mcp-loop.js';
import type { McpCallItem } from '../../wire/openai-responses.js';

/** The input items of earlier turns with MCP tools (read where the gateway runs the request's MCP tools). */
export const MCP_TYPES: ReadonlySet<string> = new Set([
  'mcp_list_tools',
  'mcp_call',
  'mcp_approval_request',
  'mcp_approval_response',
]);

/**
 * An MCP item of the input as the conversation it stands for: a listing is nothing (the tools are listed again), a
 * call the model's call and the tool's result, an approval request the model's call (waiting for its answer), an
 * approval response nothing here (the loop reads them: approvalAnswers). Undefined when malformed (a problem named).
 */
export function mcpInputItem(
  item: ResponsesInputItem,
  at: string,
  problems: ProblemList,
): { call?: ToolCall; messages?: ChatMessage[] } | undefined {
  if (item.type === 'mcp_list_tools' || item.type === 'mcp_approval_response') return {};
  const { id, server_label: label, name } = item;
  const args = typeof item.arguments === 'string' ? item.arguments : undefined;
  for (const [field, value] of [
    ['id', id],
    ['server_label', label],
    ['name', name],
    ['arguments', args],
  ] as const)
    if (typeof value !== 'string' || (value === '' && field !== 'arguments'))
      problems.add({ field: `${at}.${field}`, problem: 'must be a non-empty string' });
  if (typeof id !== 'string' || typeof label !== 'string' || typeof name !== 'string' || args === undefined)
    return undefined;
  if (item.type === 'mcp_approval_request') return { call: mcpChatCall(id, label, name, args) };
  const output = typeof item.output === 'string' ? item.output : null;
  const error = (item.error ?? null) as McpCallItem['error'];
  const call: McpCallItem = {
    type: 'mcp_call',
    id,
    status: 'completed',
    approval_request_id: null,
    arguments: args,
    error,
    name,
    output,
    server_label: label,
  };
  return { messages: mcpCallMessages(call) };
}

/** The request's `mcp_approval_response` items, by the approval request each answers. */
export function approvalAnswers(input: unknown, problems: ProblemList): Map<string, ApprovalAnswer> {
  const answers = new Map<string, ApprovalAnswer>();
  if (!Array.isArray(input)) return answers;
  input.forEach((item: unknown, i) => {
    const entry = item as Partial<Record<string, unknown>> | null;
    if (entry?.type !== 'mcp_approval_response') return;
    const at = `input[${i}]`;
    const id = entry.approval_request_id;
    if (typeof id !== 'string' || id === '') {
      problems.add({ field: `${at}.approval_request_id`, problem: 'must be the id of an mcp_approval_request' });
      return;
    }
    if (typeof entry.approve !== 'boolean') {
      problems.add({ field: `${at}.approve`, problem: 'must be true or false' });
      return;
    }
    answers.set(id, { approve: entry.approve, at });
  });
  return answers;
}
