import type { OutputItem, ResponseObject } from '../../wire/openai-responses.js';

const str = (value: string | null): string => (value === null ? 'null' : JSON.stringify(value));
const num = (value: number | null): string => (value === null || !Number.isFinite(value) ? 'null' : String(value));
/** The cache writes of a usage's input details: only when there were some (src/providers/usage-shapes.ts). */
const writes = (value: number | undefined): string =>
  value === undefined ? '' : `,"cache_write_tokens":${num(value)}`;

/**
 * `JSON.stringify(response)`, written by hand for the fixed keys: the same text, key for key, with only strings
 * and the caller's own values (tools, metadata, formats) going through the generic serialiser. Every Responses
 * answer is serialised once per call; this kept the translation within its budget (docs/benchmarks.md).
 */
export function responseJson(r: ResponseObject): string {
  let output = '';
  for (let i = 0; i < r.output.length; i++) output += (i === 0 ? '' : ',') + itemJson(r.output[i] as OutputItem);
  const u = r.usage;
  const usage =
    u === null
      ? 'null'
      : `{"input_tokens":${num(u.input_tokens)},"input_tokens_details":{"cached_tokens":${num(u.input_tokens_details.cached_tokens)}${writes(u.input_tokens_details.cache_write_tokens)}},` +
        `"output_tokens":${num(u.output_tokens)},"output_tokens_details":{"reasoning_tokens":${num(u.output_tokens_details.reasoning_tokens)}},"total_tokens":${num(u.total_tokens)}}`;
  return (
    `{"id":${str(r.id)},"object":"response","created_at":${num(r.created_at)},"status":${str(r.status)},` +
    `"background":${r.background ? 'true' : 'false'},"completed_at":${num(r.completed_at)},` +
    `"error":${r.error === null ? 'null' : JSON.stringify(r.error)},"incomplete_details":${r.incomplete_details === null ? 'null' : JSON.stringify(r.incomplete_details)},` +
    `"instructions":${str(r.instructions)},"max_output_tokens":${num(r.max_output_tokens)},"max_tool_calls":${num(r.max_tool_calls)},` +
    `"model":${str(r.model)},"output":[${output}],"parallel_tool_calls":${r.parallel_tool_calls ? 'true' : 'false'},` +
    `"presence_penalty":${num(r.presence_penalty)},"frequency_penalty":${num(r.frequency_penalty)},"previous_response_id":${str(r.previous_response_id)},` +
    `"prompt_cache_key":${str(r.prompt_cache_key)},"prompt_cache_retention":${str(r.prompt_cache_retention)},` +
    `"reasoning":{"effort":${str(r.reasoning.effort)},"summary":${str(r.reasoning.summary)}},"safety_identifier":${str(r.safety_identifier)},` +
    `"service_tier":${str(r.service_tier)},"store":${r.store ? 'true' : 'false'},"temperature":${num(r.temperature)},` +
    `"text":${JSON.stringify(r.text)},"tool_choice":${JSON.stringify(r.tool_choice)},"tools":${JSON.stringify(r.tools)},` +
    `"top_logprobs":${num(r.top_logprobs)},"top_p":${num(r.top_p)},"truncation":${str(r.truncation)},"usage":${usage},` +
    `"user":${str(r.user)},"metadata":${JSON.stringify(r.metadata)}}`
  );
}

function itemJson(item: OutputItem): string {
  if (
    item.type === 'file_search_call' ||
    item.type === 'mcp_list_tools' ||
    item.type === 'mcp_call' ||
    item.type === 'mcp_approval_request'
  )
    return JSON.stringify(item);
  if (item.type === 'function_call' || item.type === 'custom_tool_call') {
    const namespace = item.namespace === undefined ? '' : `"namespace":${str(item.namespace)},`;
    const payload = item.type === 'function_call' ? `"arguments":${str(item.arguments)}` : `"input":${str(item.input)}`;
    return `{"type":"${item.type}","id":${str(item.id)},"call_id":${str(item.call_id)},"name":${str(item.name)},${namespace}${payload},"status":${str(item.status)}}`;
  }
  let content = '';
  for (let i = 0; i < item.content.length; i++) {
    const part = item.content[i];
    if (part === undefined) continue;
    content +=
      (i === 0 ? '' : ',') +
      (part.type === 'output_text'
        ? `{"type":"output_text","text":${str(part.text)},"annotations":${part.annotations.length === 0 ? '[]' : JSON.stringify(part.annotations)},"logprobs":[]}`
        : `{"type":"refusal","refusal":${str(part.refusal)}}`);
  }
  return `{"type":"message","id":${str(item.id)},"status":${str(item.status)},"role":"assistant","content":[${content}]}`;
}
