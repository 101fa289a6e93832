import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isGatewayError } from '../../errors/gateway-error.js';

/** The most characters of a tool's result text the model is given (the service bounds the result's bytes too). */
const MAX_RESULT_CHARS = 256 * 1024;

/** Why a call did not give a result: the tool said so (`isError`), or the call failed (timeout, upstream, limits). */
export type McpCallError =
  { type: 'mcp_tool_execution_error'; content: unknown } | { type: 'http_error'; code: number; message: string };

/** What one call ended with: the text the model reads, and the error when it failed. */
export interface McpCallOutcome {
  /** The result's text (null: the call failed before any result). */
  output: string | null;
  error: McpCallError | null;
  /** What the model is given as the tool's result. */
  forModel: string;
}

/**
 * A tool's result as text: its text parts joined by blank lines; any other part (an image, a resource) as its JSON
 * (the model reads text only), bounded.
 */
export function resultText(result: CallToolResult): string {
  const parts = Array.isArray(result.content) ? result.content : [];
  const text = parts
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : JSON.stringify(part)))
    .join('\n\n');
  return text.length > MAX_RESULT_CHARS ? `${text.slice(0, MAX_RESULT_CHARS)}…` : text;
}

/** A result the tool gave (an error one too: `isError`, which the model is told). */
export function resultOutcome(result: CallToolResult): McpCallOutcome {
  const output = resultText(result);
  if (result.isError !== true) return { output, error: null, forModel: output };
  return {
    output,
    error: { type: 'mcp_tool_execution_error', content: result.content },
    forModel: `The tool reported an error: ${output}`,
  };
}

/**
 * A call that failed (a timeout, an unreachable server, a limit): an `http_error` with the gateway's status and
 * message, told to the model as the tool's result (it may answer without the tool, or try again).
 */
export function failureOutcome(error: unknown): McpCallOutcome {
  const code = isGatewayError(error) ? error.status : 500;
  const message = isGatewayError(error) ? `${error.code}: ${error.message}` : 'internal_error: the tool call failed';
  return { output: null, error: { type: 'http_error', code, message }, forModel: `The tool call failed (${message})` };
}
