import type { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ServerSdk } from '../../mcp/sdk.js';
import { isGatewayError } from '../../errors/gateway-error.js';

/**
 * A failure as the JSON-RPC error an MCP client reads: our registry's code, message and details in `data` (the
 * same `{code, message, details}` every other API answers with), under JSON-RPC's own codes — the caller's fault
 * (4xx) `-32602` (invalid params), a limit `-32000` with `data.details.retry_after_ms`, ours or the upstream's
 * `-32603`. An unexpected error says only `internal_error` (its text stays in the log).
 */
export function rpcError(sdk: ServerSdk, error: unknown): McpError {
  const { McpError, ErrorCode: RpcCode } = sdk.types;
  if (error instanceof McpError) return error;
  if (!isGatewayError(error))
    return new McpError(RpcCode.InternalError, 'The gateway failed unexpectedly.', {
      code: 'internal_error',
      message: 'The gateway failed unexpectedly; the request id identifies it in the logs.',
      details: {},
    });
  const retryAfterMs = error.retryAfterMs;
  const details =
    retryAfterMs !== undefined && error.details.retry_after_ms === undefined
      ? { ...error.details, retry_after_ms: retryAfterMs }
      : error.details;
  const code = error.status === 429 ? -32000 : error.status < 500 ? RpcCode.InvalidParams : RpcCode.InternalError;
  return new McpError(code, `${error.code}: ${error.message}`, {
    code: error.code,
    message: error.message,
    details,
  });
}
