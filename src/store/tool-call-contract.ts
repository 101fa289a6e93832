/**
 * MCP tool-call records in the usage store (docs/mcp.md, "Records"): one row per call, whoever asked, refused calls
 * included. Never the arguments or the result: their sizes only. The core's
 * `ToolCallRecord` (core/mcp/tool-call-record.ts) is this type.
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

export interface StoredToolCall {
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

/** Tool calls of one caller, server and tool over a period. */
export interface ToolCallSummaryRow {
  caller: string;
  server: string;
  tool: string;
  calls: number;
  ok: number;
  /** Calls that did not end `ok` (a tool's own `isError` answer included), refused ones included. */
  errors: number;
  refused: number;
  /** Duration percentiles (nearest rank) over the calls the upstream saw (refused ones left out); null: none. */
  p50Ms: number | null;
  p99Ms: number | null;
  bytesIn: number;
  bytesOut: number;
}

export interface ToolCallStore {
  /** Writes the records in one transaction (one statement in PostgreSQL): all or none. */
  appendToolCalls(records: readonly StoredToolCall[]): Promise<void>;
  /** Calls that arrived in [fromMs, toMs) per caller, server and tool, the most called first, at most `limit` rows. */
  summarizeToolCalls(fromMs: number, toMs: number, limit: number): Promise<ToolCallSummaryRow[]>;
  /** The most recent calls, newest first. */
  recentToolCalls(limit: number): Promise<StoredToolCall[]>;
  /** Deletes calls that arrived before `beforeMs`, the oldest first, at most `limit`; returns how many. */
  purgeToolCalls(beforeMs: number, limit: number): Promise<number>;
}
