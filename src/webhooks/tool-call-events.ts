import type { ToolCallRecord } from '../core/mcp/tool-call-record.js';
import type { Webhooks } from './webhooks.js';

export const TOOL_CALLED = 'mcp.tool_called';
export const TOOL_FAILED = 'mcp.tool_failed';

/**
 * The MCP tool-call events (docs/webhooks.md): `mcp.tool_called` for a call the tool answered (`ok`, and
 * `tool_error`: the tool said its call failed, the gateway's part worked), `mcp.tool_failed` for every other
 * outcome (refused, timeout, cancelled, upstream_error). Sizes only, never the arguments or the result. Canary
 * stage at first, like every kind added after the first release.
 */
export function toolCallEvents(webhooks: Webhooks): (record: ToolCallRecord) => void {
  return (record) => {
    const kind = record.outcome === 'ok' || record.outcome === 'tool_error' ? TOOL_CALLED : TOOL_FAILED;
    if (!webhooks.wants(kind)) return;
    void webhooks.emit(kind, {
      call_id: record.callId,
      caller: record.caller,
      server: record.server,
      tool: record.tool,
      via: record.via,
      outcome: record.outcome,
      code: record.code,
      duration_ms: record.durationMs,
      bytes_in: record.bytesIn,
      bytes_out: record.bytesOut,
      request_id: record.requestId,
    });
  };
}
