import { GatewayError } from '../../errors/gateway-error.js';
import type { ToolCall } from '../../providers/provider-contract.js';
import { argumentsObject, checkArguments } from '../tool-arguments.js';
import { outputItemId } from './ids.js';
import { CUSTOM_INPUT } from './request-tools.js';
import { ToolNames } from './tool-names.js';
import type { CustomToolCallItem, FunctionCallItem } from '../../wire/openai-responses.js';

export type CallItem = FunctionCallItem | CustomToolCallItem;

/**
 * The output item of a chat tool call, as the caller declared its tool: a `function_call` under the caller's own
 * name (and, for a function of a `namespace` tool, that namespace: Codex runs such a call only with it), or a
 * `custom_tool_call` whose `input` is filled in when the call is complete (finishCall). A name no declared tool has
 * is shown as it came. Keys in the order response-json.ts writes them.
 */
export function callItem(
  names: ToolNames | undefined,
  chatName: string,
  callId: string,
  status: CallItem['status'],
  /** Where the item is: its response's id and its place in `output` (its id names both: ids.ts outputItemId). */
  at: { responseId: string; index: number },
): CallItem {
  const tool = names?.callerTool(chatName);
  const namespace = tool?.namespace === undefined ? {} : { namespace: tool.namespace };
  if (tool?.kind === 'custom')
    return {
      type: 'custom_tool_call',
      id: outputItemId(at.responseId, 'ctc', at.index),
      call_id: callId,
      name: tool.name,
      ...namespace,
      input: '',
      status,
    };
  return {
    type: 'function_call',
    id: outputItemId(at.responseId, 'fc', at.index),
    call_id: callId,
    name: tool?.name ?? chatName,
    ...namespace,
    arguments: '',
    status,
  };
}

/**
 * Completes a call item from its chat arguments. A function call keeps them as they are, which must be a JSON
 * object (tool-arguments.ts); a custom call's input is the string the function's one parameter carried: `input`,
 * or the only string a model that renamed the parameter sent. Anything else makes the answer unusable
 * (`upstream_invalid_response`), unless it was cut short (`incomplete`): then the input is what could be read.
 */
export function finishCall(item: CallItem, args: string, incomplete: boolean): void {
  if (item.type === 'function_call') {
    if (!incomplete) checkArguments(args, item.call_id);
    item.arguments = args;
    return;
  }
  const input = customInput(args);
  if (input === undefined && !incomplete) {
    throw new GatewayError('upstream_invalid_response', {
      reason: `the arguments of custom tool call ${item.call_id.slice(0, 64)} are not a JSON object with a string "${CUSTOM_INPUT}"`,
    });
  }
  item.input = input ?? '';
}

function customInput(args: string): string | undefined {
  const object = argumentsObject(args);
  if (!object) return undefined;
  if (typeof object[CUSTOM_INPUT] === 'string') return object[CUSTOM_INPUT];
  const strings = Object.values(object).filter((value) => typeof value === 'string');
  return Object.keys(object).length === 1 && strings.length === 1 ? strings[0] : undefined;
}

/** A call item of a stored answer as the chat tool call it was (its name upstream; a custom input as the arguments). */
export function asChatCall(item: CallItem, names: ToolNames | undefined): ToolCall {
  const name = (names ?? new ToolNames()).chatName(item.name, item.namespace);
  const args = item.type === 'custom_tool_call' ? JSON.stringify({ [CUSTOM_INPUT]: item.input }) : item.arguments;
  return { id: item.call_id, type: 'function', function: { name, arguments: args } };
}
