import type { McpCallRun } from '../mcp-tools/mcp-loop.js';
import { argumentsObject } from '../tool-arguments.js';
import type { AnthropicMcpToolResultBlock, AnthropicMcpToolUseBlock } from '../../wire/anthropic.js';

/** A call's `mcp_tool_use` id, in Anthropic's form (`mcptoolu_…`), from its item id. */
export function mcpToolUseId(run: McpCallRun): string {
  return `mcptoolu_${run.id.slice('mcp_'.length)}`;
}

/** A call the gateway made, as Anthropic's connector shows it: the tool, its server (as the caller named it), its input. */
export function mcpToolUseBlock(run: McpCallRun): AnthropicMcpToolUseBlock {
  return {
    type: 'mcp_tool_use',
    id: mcpToolUseId(run),
    name: run.name,
    server_name: run.label,
    input: argumentsObject(run.arguments) ?? {},
  };
}

/** What the call gave: its text, or what failed (`is_error`). */
export function mcpToolResultBlock(run: McpCallRun): AnthropicMcpToolResultBlock {
  const outcome = run.outcome;
  const text =
    outcome?.output ??
    (outcome?.error?.type === 'http_error' ? outcome.error.message : 'The tool call gave no result.');
  return {
    type: 'mcp_tool_result',
    tool_use_id: mcpToolUseId(run),
    is_error: outcome?.error !== null && outcome?.error !== undefined,
    content: [{ type: 'text', text }],
  };
}
