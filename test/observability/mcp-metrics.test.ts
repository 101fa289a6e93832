/** The MCP tool-call metrics: counters by server, tool and outcome, and a bound on the tool names an upstream chooses. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import type { ToolCallRecord } from '../../src/core/mcp/tool-call-record.js';
import { MAX_TOOLS_PER_SERVER, registerToolCallMetrics } from '../../src/observability/mcp-metrics.js';

const record = (server: string, tool: string, outcome: ToolCallRecord['outcome']): ToolCallRecord => ({
  timeMs: 0,
  callId: 'mcp_x',
  requestId: 'req_x',
  caller: 'admin',
  environment: 'dev',
  server,
  tool,
  via: 'mcp',
  outcome,
  code: outcome === 'ok' ? null : 'rate_limited',
  durationMs: 20,
  bytesIn: 1,
  bytesOut: 1,
});

test('past 200 distinct tools a server, calls are counted under tool="other"; refusals have no duration', async () => {
  const registry = new Registry();
  const metrics = registerToolCallMetrics(registry);
  for (let i = 0; i < MAX_TOOLS_PER_SERVER + 50; i++) metrics.observe(record('wide', `tool-${i}`, 'ok'));
  metrics.observe(record('wide', 'tool-0', 'ok')); // a tool seen before keeps its label
  metrics.observe(record('narrow', 'only', 'refused'));
  const text = await registry.metrics();
  const series = text.split('\n').filter((l) => l.startsWith('llmgw_mcp_tool_calls_total{server="wide"'));
  assert.equal(series.length, MAX_TOOLS_PER_SERVER + 1);
  assert.ok(series.includes('llmgw_mcp_tool_calls_total{server="wide",tool="other",outcome="ok"} 50'));
  assert.ok(series.includes('llmgw_mcp_tool_calls_total{server="wide",tool="tool-0",outcome="ok"} 2'));
  assert.match(text, /llmgw_mcp_tool_calls_total\{server="narrow",tool="only",outcome="refused"\} 1/);
  assert.doesNotMatch(text, /llmgw_mcp_tool_call_duration_seconds_count\{server="narrow"/);
  assert.match(text, /llmgw_mcp_tool_call_duration_seconds_bucket\{server="wide",tool="other",le="0.025"\} 50/);
});
