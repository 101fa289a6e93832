/**
 * One MCP tool call as records, metrics and events see it (core/mcp/tool-service.ts makes one per call, whoever
 * asked: `/mcp`, the Responses API's `mcp` tool, the Messages API's `mcp_servers`): the usage store's row, declared
 * once there (store/tool-call-contract.ts).
 */
export type { StoredToolCall as ToolCallRecord, ToolCallOutcome } from '../../store/tool-call-contract.js';
