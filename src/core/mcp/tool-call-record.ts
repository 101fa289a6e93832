/**
 * One MCP tool call as records, metrics and events see it (core/mcp/tool-service.ts makes one per call, whoever
 * asked: `/mcp`, the Responses API's `mcp` tool, the Messages API's `mcp_servers`).
 */

/** How one tool call ended, as records, metrics and events say it. */
export type ToolCallOutcome =
  /** The tool answered (`isError: false`). */
  | 'ok'
  /** The tool answered with `isError: true` (the call itself worked). */
  | 'tool_error'
  /** Refused before the upstream saw it: no right, a limit, a size bound. */
  | 'refused'
  /** Cut at its timeout (the upstream told to cancel). */
  | 'timeout'
  /** The caller went away or cancelled (the upstream told to cancel). */
  | 'cancelled'
  /** The upstream failed: unreachable, a protocol error, a JSON-RPC error. */
  | 'upstream_error';

/** One tool call as the usage store keeps it: never the arguments or the result, only their sizes. */
export interface ToolCallRecord {
  /** When the call arrived, ms since 1970. */
  timeMs: number;
  /** The gateway's id for this call (`mcp_…`), also on its span and events. */
  callId: string;
  /** The HTTP request it came in (the `/mcp` POST, or the model call that ran it). */
  requestId: string;
  caller: string;
  environment: string;
  server: string;
  tool: string;
  /** Which way it came: the gateway's `/mcp` endpoint, or a model answer's tool loop. */
  via: 'mcp' | 'responses' | 'messages' | 'chat';
  outcome: ToolCallOutcome;
  /** The error registry's code when it did not end `ok` (null otherwise). */
  code: string | null;
  durationMs: number;
  /** The arguments' JSON size, bytes. */
  bytesIn: number;
  /** The result's JSON size, bytes (0 when there was none). */
  bytesOut: number;
}
