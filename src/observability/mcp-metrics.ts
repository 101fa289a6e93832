import type { Registry } from 'prom-client';
import type { ToolCallRecord } from '../core/mcp/tool-call-record.js';
import { FastCounter, FastHistogram } from './fast-metrics.js';

/** Distinct tool names kept as labels per server; later ones are counted as `other`. */
export const MAX_TOOLS_PER_SERVER = 200;
/** Distinct tool names kept as labels across all servers (the servers are the config's, at most 256). */
const MAX_TOOLS = 2_000;
export const OTHER_TOOL = 'other';

/**
 * The MCP tool-call metrics (docs/metrics.md): `llmgw_mcp_tool_calls_total{server,tool,outcome}` and
 * `llmgw_mcp_tool_call_duration_seconds{server,tool}`. Tool names come from the upstream servers, so they are
 * bounded like any value an outsider chooses: the first 200 a server's calls name keep their own label, the rest
 * share `other` (a server that lists thousands of tools, or renames them on every `list_changed`, cannot grow the
 * scrape without bound).
 */
export function registerToolCallMetrics(registry: Registry): { observe(record: ToolCallRecord): void } {
  const calls = new FastCounter(
    'llmgw_mcp_tool_calls_total',
    'MCP tool calls by server, tool and outcome (ok, tool_error, refused, timeout, cancelled, upstream_error); past 200 tools a server, tool is "other"',
    ['server', 'tool', 'outcome'],
    registry,
  );
  const duration = new FastHistogram(
    'llmgw_mcp_tool_call_duration_seconds',
    'MCP tool calls the upstream saw (refused ones left out): admission to answer, by server and tool',
    ['server', 'tool'],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registry,
  );
  const toolsOf = new Map<string, Set<string>>();
  let tools = 0;
  const label = (server: string, tool: string): string => {
    let seen = toolsOf.get(server);
    if (!seen) {
      seen = new Set();
      toolsOf.set(server, seen);
    }
    if (seen.has(tool)) return tool;
    if (seen.size >= MAX_TOOLS_PER_SERVER || tools >= MAX_TOOLS) return OTHER_TOOL;
    seen.add(tool);
    tools += 1;
    return tool;
  };
  return {
    observe(record) {
      const tool = label(record.server, record.tool);
      calls.labels(record.server, tool, record.outcome).inc();
      if (record.outcome !== 'refused') duration.labels(record.server, tool).observe(record.durationMs / 1000);
    },
  };
}
