/**
 * MCP tool-call records in the usage store (docs/mcp.md, "Records"): one row per call, whoever asked, refused calls
 * included. Never the arguments or the result: their sizes only. The shape is core/mcp/tool-call-record.ts's
 * `ToolCallRecord` (this layer sits below core, so it is declared here too; the two are checked to match where the
 * recorder is wired).
 */
export interface StoredToolCall {
  timeMs: number;
  callId: string;
  requestId: string;
  caller: string;
  environment: string;
  server: string;
  tool: string;
  via: 'mcp' | 'responses' | 'messages' | 'chat';
  outcome: 'ok' | 'tool_error' | 'refused' | 'timeout' | 'cancelled' | 'upstream_error';
  code: string | null;
  durationMs: number;
  bytesIn: number;
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
