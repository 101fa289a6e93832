import { isJsonObject, type JsonObject } from '../../wire/json.js';
import type {
  EchoedFunctionTool,
  ResponseObject,
  ResponseStatus,
  ResponsesRequest,
} from '../../wire/openai-responses.js';

/**
 * OpenAI's values for what neither the request nor a translated answer says: the sampling defaults (temperature
 * and top_p 1, no penalties, no log probabilities), the `default` service tier, medium verbosity.
 */
const DEFAULTS = {
  temperature: 1,
  top_p: 1,
  presence_penalty: 0,
  frequency_penalty: 0,
  top_logprobs: 0,
  service_tier: 'default',
  verbosity: 'medium',
} as const;

const stringOr = (value: unknown, otherwise: string | null): string | null =>
  typeof value === 'string' ? value : otherwise;
const numberOr = (value: unknown, otherwise: number): number =>
  typeof value === 'number' && Number.isFinite(value) ? value : otherwise;
const integerOrNull = (value: unknown): number | null => (Number.isSafeInteger(value) ? (value as number) : null);

/**
 * The response object of a request, before its output is known (`status: in_progress`): the one place a
 * translated response's fields are set, every field of the specification (wire/openai-responses.ts
 * ResponseObject) from the request where it says, OpenAI's defaults where it does not. Only `status`,
 * `completed_at`, `incomplete_details`, `error`, `output`, `usage` and `model` change afterwards (`settle`).
 */
export function responseShell(body: ResponsesRequest, id: string, createdAt: number): ResponseObject {
  const text = isJsonObject(body.text) ? body.text : undefined;
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status: 'in_progress',
    background: false,
    completed_at: null,
    error: null,
    incomplete_details: null,
    instructions: typeof body.instructions === 'string' ? body.instructions : null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: integerOrNull(body.max_tool_calls),
    model: body.model,
    output: [],
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    presence_penalty: DEFAULTS.presence_penalty,
    frequency_penalty: DEFAULTS.frequency_penalty,
    previous_response_id: body.previous_response_id ?? null,
    prompt_cache_key: stringOr(body.prompt_cache_key, null),
    prompt_cache_retention: stringOr(body.prompt_cache_retention, null),
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
    safety_identifier: stringOr(body.safety_identifier, null),
    // The tier that served it: what the caller named, `default` for none or `auto` (a translated upstream says none).
    service_tier:
      typeof body.service_tier === 'string' && body.service_tier !== 'auto' ? body.service_tier : DEFAULTS.service_tier,
    store: body.store !== false,
    temperature: numberOr(body.temperature, DEFAULTS.temperature),
    text: {
      format: text?.format ?? { type: 'text' },
      verbosity: stringOr(text?.verbosity, DEFAULTS.verbosity) as string,
    },
    tool_choice: body.tool_choice ?? 'auto',
    tools: Array.isArray(body.tools) ? body.tools.map(echoedTool) : [],
    top_logprobs: numberOr(body.top_logprobs, DEFAULTS.top_logprobs),
    top_p: numberOr(body.top_p, DEFAULTS.top_p),
    truncation: 'disabled',
    usage: null,
    user: body.user ?? null,
    metadata: body.metadata ?? {},
  };
}

/**
 * A tool as the response echoes it: a function tool with every field the specification lists (`description`,
 * `parameters` and `strict` `null` where the caller gave none), any other tool as the caller sent it.
 */
function echoedTool(tool: JsonObject): JsonObject | EchoedFunctionTool {
  if (tool.type !== 'function' || typeof tool.name !== 'string') return tool;
  return {
    ...tool,
    type: 'function',
    name: tool.name,
    description: stringOr(tool.description, null),
    parameters: tool.parameters ?? null,
    strict: typeof tool.strict === 'boolean' ? tool.strict : null,
  };
}

/** Sets how a response ended: its status and, when it completed, when (`completed_at`, Unix seconds). */
export function settle(response: ResponseObject, status: ResponseStatus, nowMs: number = Date.now()): ResponseObject {
  response.status = status;
  response.completed_at = status === 'completed' ? Math.floor(nowMs / 1000) : null;
  return response;
}
