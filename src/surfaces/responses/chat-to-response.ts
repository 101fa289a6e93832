import type { ChatRequestBody, ToolCall, Usage } from '../../providers/provider-contract.js';
import { checkedUsage } from '../../providers/usage-figures.js';
import { responsesUsageOf } from '../../providers/usage-shapes.js';
import { completionToolCalls } from '../tool-arguments.js';
import { newId, outputItemId } from './ids.js';
import { asChatCall, callItem, finishCall, type CallItem } from './output-calls.js';
import { modelFunctionName } from '../../mcp/tool-names.js';
import { parseCompletionAnswer } from '../../wire/openai-chat.js';
import {
  endingOf,
  type McpCallItem,
  type MessageItem,
  type OutputItem,
  type ResponseObject,
  type ResponsesUsageObject,
} from '../../wire/openai-responses.js';
import { settle } from './response-object.js';
import type { ToolNames } from './tool-names.js';

/** Chat usage as Responses usage (src/providers/usage-shapes.ts: cached, cache-write and reasoning token counts). */
export function responseUsage(reported: Usage | null | undefined): ResponsesUsageObject | null {
  if (!reported) return null;
  // Every figure shown is checked (an OpenAI usage's `*_details` become the usage's parts there).
  return responsesUsageOf(checkedUsage(reported));
}

/**
 * A `chat.completion` (JSON text) as the finished response object: `shell`, completed (it is changed in place). Tool
 * calls are named as the caller's tools are (`names`: namespaced functions, custom tools).
 */
export function completionToResponse(completionText: string, shell: ResponseObject, names?: ToolNames): ResponseObject {
  const completion = parseCompletionAnswer(completionText);
  const choice = completion.choices?.[0];
  const message = choice?.message;
  const output: Array<MessageItem | CallItem> = [];
  const text = typeof message?.content === 'string' ? message.content : '';
  const refusal = typeof message?.refusal === 'string' ? message.refusal : undefined;
  const calls = completionToolCalls(message?.tool_calls);
  if (text !== '' || refusal !== undefined || calls.length === 0) {
    const item: MessageItem = {
      type: 'message',
      id: outputItemId(shell.id, 'msg', output.length),
      status: 'completed',
      role: 'assistant',
      content: [],
    };
    if (text !== '' || refusal === undefined)
      item.content.push({ type: 'output_text', text, annotations: [], logprobs: [] });
    if (refusal !== undefined) item.content.push({ type: 'refusal', refusal });
    output.push(item);
  }
  const ending = endingOf(choice?.finish_reason);
  for (const call of calls) {
    const item = callItem(names, call.name ?? '', call.id ?? newId('fc'), 'completed', {
      responseId: shell.id,
      index: output.length,
    });
    // Arguments that are not a JSON object make the answer unusable, unless it was cut short (src/surfaces/tool-arguments.ts).
    finishCall(item, call.arguments ?? '', ending.status === 'incomplete');
    output.push(item);
  }
  if (ending.status === 'incomplete') for (const item of output) item.status = 'incomplete';
  // The shell is this call's own object: completed in place rather than copied (one object less per call).
  const response = shell;
  settle(response, ending.status);
  response.incomplete_details = ending.incomplete_details;
  response.output = output;
  response.usage = responseUsage(completion.usage);
  if (typeof completion.model === 'string') response.model = completion.model;
  return response;
}

/**
 * A chat request's messages that a stored response adds to a conversation: its input turns and its answer. An MCP
 * call the gateway made is the call and its result, before the answer (one approved by the request is answered in
 * that request's input); an approval request is a call of the answer, which the next request's approval answers.
 */
export function outputAsMessages(output: readonly OutputItem[], names?: ToolNames): ChatRequestBody['messages'] {
  let text = '';
  const calls: ToolCall[] = [];
  const mcpCalls: ChatRequestBody['messages'] = [];
  for (const item of output) {
    if (item.type === 'message') {
      for (const part of item.content) text += part.type === 'output_text' ? part.text : part.refusal;
    } else if (item.type === 'mcp_call') {
      if (item.approval_request_id === null) mcpCalls.push(...mcpCallMessages(item));
    } else if (item.type === 'mcp_approval_request') {
      calls.push(mcpChatCall(item.id, item.server_label, item.name, item.arguments));
    } else if (item.type !== 'file_search_call' && item.type !== 'mcp_list_tools') {
      // A search the gateway ran is not a call of the caller's: the conversation goes on with its answer only.
      calls.push(asChatCall(item, names));
    }
  }
  return [
    ...mcpCalls,
    {
      role: 'assistant',
      content: calls.length > 0 && text === '' ? null : text,
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
    },
  ];
}

/** An MCP call as the chat call the model made (its function named as the gateway offers it: mcp/tool-names.ts). */
export function mcpChatCall(id: string, server: string, name: string, args: string): ToolCall {
  return { id, type: 'function', function: { name: modelFunctionName(server, name), arguments: args } };
}

/** An MCP call the gateway made, as the model's call and the tool's result (its output, or what failed). */
export function mcpCallMessages(item: McpCallItem): ChatRequestBody['messages'] {
  const result =
    item.output ??
    `The tool call failed (${item.error?.type === 'mcp_tool_execution_error' ? 'tool error' : (item.error?.message ?? 'no result')})`;
  return [
    {
      role: 'assistant',
      content: null,
      tool_calls: [mcpChatCall(item.id, item.server_label, item.name, item.arguments)],
    },
    { role: 'tool', tool_call_id: item.id, content: result },
  ];
}
