import type { McpApprovalRun, McpCallRun, McpEvent, McpToolLoop } from '../mcp-tools/mcp-loop.js';
import type { McpListing } from '../mcp-tools/mcp-plan.js';
import { outputItemId } from './ids.js';
import type {
  McpApprovalRequestItem,
  McpCallItem,
  McpListToolsItem,
  OutputItem,
  ResponseObject,
} from '../../wire/openai-responses.js';
import type { EmitEvent } from './file-search-output.js';

/** The id of a listing's item: `mcpl_` and the response's and the listing's place (stable for one response). */
function listingId(responseId: string, index: number): string {
  return `mcpl_${responseId.slice('resp_'.length)}${index.toString(16).padStart(4, '0')}`;
}

/** One server's tools as the `mcp_list_tools` item lists them (each tool's schema, description and annotations). */
export function listToolsItem(listing: McpListing, id: string): McpListToolsItem {
  return {
    type: 'mcp_list_tools',
    id,
    server_label: listing.label,
    tools: listing.tools.map(({ tool }) => ({
      name: tool.name,
      input_schema: tool.inputSchema,
      description: tool.description ?? null,
      annotations: tool.annotations ?? null,
    })),
    error: null,
  };
}

/** A call's item: `in_progress` while it runs, then `completed` with its output, or `failed` with its error. */
export function mcpCallItem(run: McpCallRun): McpCallItem {
  const outcome = run.outcome;
  return {
    type: 'mcp_call',
    id: run.id,
    status: outcome === undefined ? 'in_progress' : outcome.error === null ? 'completed' : 'failed',
    approval_request_id: run.approvalRequestId,
    arguments: run.arguments,
    error: outcome?.error ?? null,
    name: run.name,
    output: outcome?.output ?? null,
    server_label: run.label,
  };
}

export function approvalItem(request: McpApprovalRun): McpApprovalRequestItem {
  return {
    type: 'mcp_approval_request',
    id: request.id,
    arguments: request.arguments,
    name: request.name,
    server_label: request.label,
  };
}

/**
 * A finished response (JSON answer) with what the gateway did with its MCP tools, in OpenAI's order: each server's
 * `mcp_list_tools`, the `mcp_call` items in the order they ran, the answer's own items (ids following their new
 * places), then the `mcp_approval_request` items the answer ends with (its empty message left out: the answer is the
 * request for approval).
 */
export function withMcp(response: ResponseObject, loop: McpToolLoop): void {
  const items: OutputItem[] = loop.offer.listings.map((listing, i) =>
    listToolsItem(listing, listingId(response.id, i)),
  );
  items.push(...loop.calls.map(mcpCallItem));
  const waiting = loop.approvals.length > 0;
  for (const item of response.output) {
    const index = items.length;
    if (item.type === 'message') {
      if (waiting && item.content.every((part) => part.type === 'output_text' && part.text === '')) continue;
      item.id = outputItemId(response.id, 'msg', index);
    } else if (item.type === 'function_call' || item.type === 'custom_tool_call') {
      item.id = outputItemId(response.id, item.type === 'function_call' ? 'fc' : 'ctc', index);
    }
    items.push(item);
  }
  items.push(...loop.approvals.map(approvalItem));
  response.output = items;
}

/**
 * The listing's items at the stream's start (the tools were listed before the first turn), and the calls approved
 * by the request (run before it too): `output` is the response's, where the items take their places.
 */
export function streamMcpOpening(loop: McpToolLoop, responseId: string, output: OutputItem[], emit: EmitEvent): void {
  loop.offer.listings.forEach((listing, i) => {
    const item = listToolsItem(listing, listingId(responseId, i));
    const ref = { item_id: item.id, output_index: output.length };
    output.push(item);
    emit('response.output_item.added', { output_index: ref.output_index, item: { ...item, tools: [] } });
    emit('response.mcp_list_tools.in_progress', ref);
    emit('response.mcp_list_tools.completed', ref);
    emit('response.output_item.done', { output_index: ref.output_index, item });
  });
  for (const run of loop.calls) {
    streamMcpEvent({ kind: 'call_started', run }, output, emit);
    streamMcpEvent({ kind: 'call_done', run }, output, emit);
  }
}

/**
 * An MCP event as the stream shows it (OpenAI's order): a call's item is added `in_progress` with no arguments, its
 * arguments streamed (one delta, then done), `mcp_call.in_progress`; when it ends, `mcp_call.completed` (or
 * `failed`) and the item's `done` with its output or error. An approval request is one item, added and done.
 */
export function streamMcpEvent(event: McpEvent, output: OutputItem[], emit: EmitEvent): void {
  if (event.kind === 'approval') {
    const item = approvalItem(event.request);
    const index = output.length;
    output.push(item);
    emit('response.output_item.added', { output_index: index, item });
    emit('response.output_item.done', { output_index: index, item });
    return;
  }
  const { run } = event;
  if (event.kind === 'call_started') {
    const item = mcpCallItem({ ...run, outcome: undefined });
    const ref = { item_id: item.id, output_index: output.length };
    output.push(item);
    emit('response.output_item.added', { output_index: ref.output_index, item: { ...item, arguments: '' } });
    emit('response.mcp_call.in_progress', ref);
    if (run.arguments !== '') emit('response.mcp_call_arguments.delta', { ...ref, delta: run.arguments });
    emit('response.mcp_call_arguments.done', { ...ref, arguments: run.arguments });
    return;
  }
  const index = output.findIndex((item) => item.id === run.id);
  const item = mcpCallItem(run);
  output[index] = item;
  const ref = { item_id: item.id, output_index: index };
  emit(item.status === 'completed' ? 'response.mcp_call.completed' : 'response.mcp_call.failed', ref);
  emit('response.output_item.done', { output_index: index, item });
}
