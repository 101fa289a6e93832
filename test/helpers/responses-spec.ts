// The fields the Responses API's specification requires of a `response` object (the Open Responses
// `ResponseResource`, the schema its public compliance suite validates every answer and stream event against), each
// with the type it wants: a check of our own, so that `npm test` needs no copy of the suite.
type Check = (value: unknown) => boolean;

const isInt: Check = (v) => Number.isSafeInteger(v);
const isNumber: Check = (v) => typeof v === 'number' && Number.isFinite(v);
const isString: Check = (v) => typeof v === 'string';
const isBool: Check = (v) => typeof v === 'boolean';
const isObject: Check = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const orNull =
  (check: Check): Check =>
  (v) =>
    v === null || check(v);

export const RESPONSE_FIELDS: Readonly<Record<string, Check>> = {
  id: isString,
  object: (v) => v === 'response',
  created_at: isInt,
  completed_at: orNull(isInt),
  status: isString,
  incomplete_details: orNull(isObject),
  model: isString,
  previous_response_id: orNull(isString),
  instructions: orNull(isString),
  output: Array.isArray,
  error: orNull(isObject),
  tools: Array.isArray,
  tool_choice: (v) => isString(v) || isObject(v),
  truncation: isString,
  parallel_tool_calls: isBool,
  text: isObject,
  top_p: isNumber,
  presence_penalty: isNumber,
  frequency_penalty: isNumber,
  top_logprobs: isInt,
  temperature: isNumber,
  reasoning: orNull(isObject),
  usage: orNull(isObject),
  max_output_tokens: orNull(isInt),
  max_tool_calls: orNull(isInt),
  store: isBool,
  background: isBool,
  service_tier: isString,
  metadata: (v) => v !== undefined,
  safety_identifier: orNull(isString),
  prompt_cache_key: orNull(isString),
};

/** What a function tool echoed in `tools` must carry. */
const FUNCTION_TOOL_FIELDS: Readonly<Record<string, Check>> = {
  type: (v) => v === 'function',
  name: isString,
  description: orNull(isString),
  parameters: orNull(isObject),
  strict: orNull(isBool),
};

/** Every way `response` falls short of the specification, as `field: problem` lines (none: it conforms). */
export function responseProblems(response: unknown): string[] {
  if (!isObject(response)) return ['the response is not an object'];
  const r = response as Record<string, unknown>;
  const problems: string[] = [];
  for (const [field, check] of Object.entries(RESPONSE_FIELDS)) {
    if (!(field in r)) problems.push(`${field}: missing`);
    else if (!check(r[field])) problems.push(`${field}: ${JSON.stringify(r[field])} is not what the schema wants`);
  }
  if (Array.isArray(r.tools))
    r.tools.forEach((tool: unknown, i) => {
      if (!isObject(tool) || (tool as { type?: unknown }).type !== 'function') return;
      for (const [field, check] of Object.entries(FUNCTION_TOOL_FIELDS)) {
        const value = (tool as Record<string, unknown>)[field];
        if (!(field in (tool as object))) problems.push(`tools.${i}.${field}: missing`);
        else if (!check(value))
          problems.push(`tools.${i}.${field}: ${JSON.stringify(value)} is not what the schema wants`);
      }
    });
  return problems;
}
