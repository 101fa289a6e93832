import { GatewayError } from '../../errors/gateway-error.js';
import { ProblemList } from '../../http/validation-details.js';
import type { ChatRequestBody } from '../../providers/provider-contract.js';
import { isJsonObject } from '../../wire/json.js';
import type { ResponsesRequest } from '../../wire/openai-responses.js';
import { checkFunctionNames, planGatewayMcp, type McpPlan } from '../mcp-tools/gateway-mcp.js';
import type { McpLoopDeps } from '../mcp-tools/mcp-deps.js';
import type { McpToolLoop } from '../mcp-tools/mcp-loop.js';
import { MAX_MCP_SERVERS, readResponsesMcpTool, type McpServerSpec } from '../mcp-tools/tool-spec.js';
import type { SurfaceCall } from '../surface.js';
import { approvalAnswers } from './mcp-input.js';
import type { ToolNames } from './tool-names.js';

/**
 * What to do with a Responses request's `mcp` tools: run by the gateway when each names a configured server the
 * caller may use (gateway-mcp.ts); otherwise, for a model whose upstream speaks the Responses API, forwarded as
 * they are (OpenAI calls a public server itself: `not_ours`), and for any other model refused (404/400). A malformed
 * tool is the translated request's 400, and goes as it is to a native upstream (which judges its own API).
 */
export async function planResponsesMcp(
  request: ResponsesRequest,
  deps: McpLoopDeps | undefined,
  call: SurfaceCall,
  native: boolean,
): Promise<McpPlan> {
  if (!deps || !Array.isArray(request.tools)) return { kind: 'none' };
  const problems = new ProblemList();
  const specs: McpServerSpec[] = [];
  request.tools.forEach((tool, i) => {
    if (!isJsonObject(tool) || tool.type !== 'mcp') return;
    if (specs.length >= MAX_MCP_SERVERS)
      problems.add({ field: `tools[${i}]`, problem: `a request may name at most ${MAX_MCP_SERVERS} MCP servers` });
    const spec = readResponsesMcpTool(tool, `tools[${i}]`, problems);
    if (spec) specs.push(spec);
  });
  if (!problems.empty) {
    const error = new GatewayError('validation_failed', problems.details());
    if (native) return { kind: 'not_ours', error };
    throw error;
  }
  return planGatewayMcp(specs, deps, call, 'responses');
}

/**
 * The chat request offered the MCP tools' functions, its calls run by `loop` (a caller's function may not take one
 * of their names), and the approval requests of its conversation answered first (their approved calls run now).
 */
export async function offerMcp(
  chat: ChatRequestBody,
  names: ToolNames,
  call: SurfaceCall,
  loop: McpToolLoop,
  input: ResponsesRequest['input'],
): Promise<void> {
  checkFunctionNames(loop, (name) => names.callerTool(name) !== undefined, 'tools');
  chat.tools = [...(chat.tools ?? []), ...loop.offer.functions];
  call.loop = loop;
  const problems = new ProblemList();
  const answers = approvalAnswers(input, problems);
  if (!problems.empty) throw new GatewayError('validation_failed', problems.details());
  chat.messages = await loop.settleApprovals(chat.messages, answers);
}
