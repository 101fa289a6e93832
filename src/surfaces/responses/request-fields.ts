import type { ProblemList } from '../../http/validation-details.js';
import type { ChatExtra, ChatRequestBody } from '../../providers/provider-contract.js';
import { isJsonObject, type JsonObject } from '../../wire/json.js';
import type { ResponsesRequest } from '../../wire/openai-responses.js';

/**
 * One translation's view of its target: where problems go, where what it leaves out is named, and what the model's
 * upstreams carry.
 */
export interface TranslationContext {
  problems: ProblemList;
  /**
   * The tolerant translation names here each field it leaves out (X-Gateway-Dropped-Fields; a `translation: strict`
   * model refuses instead). Absent: the exact translation, which refuses (`capability_not_supported`) whatever it
   * would leave out or map to something else, so that such a request can go as it is to an upstream that speaks
   * the Responses API (responses-surface.ts).
   */
  notes: { drop(field: string, problem: string): void } | undefined;
  /** Whether every upstream of the model carries this chat field (providers/provider-contract.ts ChatExtra). */
  carries: (field: ChatExtra) => boolean;
  /**
   * Whether the gateway runs the request's `file_search` tool (surfaces/file-search/): the tool is then declared by
   * the loop, its `include` is served and earlier searches in the input are read past.
   */
  fileSearch?: boolean;
  /**
   * Whether the gateway runs the request's `mcp` tools (surfaces/mcp-tools/): the tools are then declared by the loop,
   * and the MCP items of earlier turns in the input (`mcp_list_tools`, `mcp_call`, `mcp_approval_request`,
   * `mcp_approval_response`) are read as the conversation they stand for.
   */
  mcp?: boolean;
}

/** Leaves `field` out: named in the tolerant translation, refused in the exact one. */
export function leaveOut(cx: TranslationContext, field: string, problem: string): void {
  if (cx.notes) cx.notes.drop(field, problem);
  else cx.problems.add({ field, problem: `${problem}: not supported on a translated upstream` });
}

/** Refuses what only the tolerant translation maps (the exact one sends such a request natively, or refuses it). */
export function tolerantOnly(cx: TranslationContext, field: string, what: string): boolean {
  if (cx.notes) return true;
  cx.problems.add({ field, problem: `${what} are not supported on a translated upstream` });
  return false;
}

/**
 * The fields of a Responses request that the translation honours, maps, or leaves out by name. Any other field is
 * refused naming it: a field the gateway does not know may change the answer.
 */
const KNOWN_FIELDS = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'temperature',
  'top_p',
  'max_output_tokens',
  'text',
  'reasoning',
  'metadata',
  'store',
  'previous_response_id',
  'stream',
  'stream_options',
  'user',
  'service_tier',
  'prompt_cache_key',
  'prompt_cache_retention',
  'safety_identifier',
  'truncation',
  'include',
  'top_logprobs',
  'background',
  'client_metadata',
  'max_tool_calls',
]);

/** Fields that only tag a request for the client's own bookkeeping: left out of a translated request, named. */
const TAGS: Record<string, string> = {
  client_metadata: "it tags the request for the client's own records; no upstream API but OpenAI's Responses has it",
};

/** Chat fields of the same name and meaning, each copied when every upstream of the model carries it. */
const SAME_NAME: ReadonlyArray<readonly [keyof ResponsesRequest & string, ChatExtra | undefined]> = [
  ['temperature', undefined],
  ['top_p', undefined],
  ['user', 'user'],
  ['safety_identifier', 'safety_identifier'],
  ['service_tier', 'service_tier'],
  ['prompt_cache_key', 'prompt_cache_key'],
  ['prompt_cache_retention', 'prompt_cache_key'],
];

const isNumberIn = (value: unknown, min: number, max: number): boolean =>
  typeof value === 'number' && value >= min && value <= max;

/**
 * The types of the fields the gateway does not read itself (the route's schema checks only those it reads, so a
 * request forwarded natively reaches its upstream as it is, which judges its own API): checked here, on the way
 * into chat, as a 400 `validation_failed` naming each.
 */
const TYPE_RULES: ReadonlyArray<readonly [string, (value: unknown) => boolean, string]> = [
  ['instructions', (v) => typeof v === 'string', 'must be a string or null'],
  ['tool_choice', (v) => typeof v === 'string' || isJsonObject(v), 'must be a string or an object'],
  ['parallel_tool_calls', (v) => typeof v === 'boolean', 'must be a boolean or null'],
  ['temperature', (v) => isNumberIn(v, 0, 2), 'must be a number from 0 to 2, or null'],
  ['top_p', (v) => isNumberIn(v, 0, 1), 'must be a number from 0 to 1, or null'],
  ['text', isJsonObject, 'must be an object or null'],
  ['reasoning', isJsonObject, 'must be an object or null'],
  [
    'metadata',
    (v) => isJsonObject(v) && metadataValid(v),
    'must be an object of at most 16 string values of at most 512 characters, or null',
  ],
  ['user', (v) => typeof v === 'string' && v.length <= 256, 'must be a string of at most 256 characters'],
  ['include', (v) => Array.isArray(v) && v.every((s) => typeof s === 'string'), 'must be a list of strings or null'],
  ['tools', Array.isArray, 'must be a list of tools'],
  // It bounds calls of built-in tools, which a translated request has none of: checked and echoed, nothing to send.
  ['max_tool_calls', (v) => Number.isSafeInteger(v) && (v as number) >= 1, 'must be a positive integer or null'],
];

function metadataValid(metadata: JsonObject): boolean {
  const values = Object.values(metadata);
  return values.length <= 16 && values.every((v) => typeof v === 'string' && v.length <= 512);
}

/** Checks the types TYPE_RULES names, and the top-level fields: unknown ones refused, tags left out by name. */
export function checkFields(body: ResponsesRequest, cx: TranslationContext): void {
  for (const field of Object.keys(body)) {
    if (!KNOWN_FIELDS.has(field))
      cx.problems.add({ field, problem: 'is not supported by this gateway on the Responses route' });
    else if (TAGS[field] !== undefined) leaveOut(cx, field, TAGS[field]);
  }
  for (const [field, valid, problem] of TYPE_RULES) {
    const value = body[field];
    if (value !== undefined && value !== null && !valid(value)) cx.problems.add({ field, problem });
  }
  for (const field of ['effort', 'summary'] as const) {
    const value = body.reasoning?.[field];
    if (value !== undefined && value !== null && typeof value !== 'string')
      cx.problems.add({ field: `reasoning.${field}`, problem: 'must be a string or null' });
  }
  const format = body.text?.format;
  if (format !== undefined && format !== null && !(isJsonObject(format) && typeof format.type === 'string')) {
    cx.problems.add({ field: 'text.format', problem: 'must be an object with a string type, or null' });
  }
  if (body.background === true)
    cx.problems.add({
      field: 'background',
      problem: 'background responses are not supported; send the request without it',
    });
  if (body.truncation !== undefined && body.truncation !== 'disabled' && body.truncation !== null) {
    cx.problems.add({
      field: 'truncation',
      problem: 'only "disabled" is supported (send X-Context-Overflow: truncate to drop the oldest turns)',
    });
  }
  if (body.top_logprobs !== undefined && body.top_logprobs !== null)
    cx.problems.add({ field: 'top_logprobs', problem: 'log probabilities are not translated' });
}

/** What `include` names to have a `file_search_call`'s results shown. */
export const FILE_SEARCH_RESULTS = 'file_search_call.results';

/**
 * The request's settings as chat fields (sampling, effort, caching, tiers, verbosity), each where the model's
 * upstreams carry it; what they do not is named. What a translated answer cannot give back (a reasoning summary,
 * encrypted reasoning, anything else `include` asks for) is named too.
 */
export function chatSettings(body: ResponsesRequest, chat: ChatRequestBody, cx: TranslationContext): void {
  for (const [field, extra] of SAME_NAME) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    if (extra === undefined || cx.carries(extra)) (chat as Record<string, unknown>)[field] = value;
    else leaveOut(cx, field, 'no upstream of this model has it');
  }
  if (typeof body.parallel_tool_calls === 'boolean') {
    // Calling one tool at a time is what every upstream can be asked for only where it has the switch.
    if (body.parallel_tool_calls || cx.carries('parallel_tool_calls'))
      chat.parallel_tool_calls = body.parallel_tool_calls;
    else leaveOut(cx, 'parallel_tool_calls', 'no upstream of this model can be kept to one tool call at a time');
  }
  if (typeof body.max_output_tokens === 'number') chat.max_tokens = body.max_output_tokens;
  if (body.stream === true) chat.stream = true;
  const reasoning = isJsonObject(body.reasoning) ? body.reasoning : undefined;
  if (typeof reasoning?.effort === 'string') chat.reasoning_effort = reasoning.effort;
  for (const [key, value] of Object.entries(reasoning ?? {})) {
    if (key === 'effort' || value === null || value === undefined || (key === 'summary' && value === 'none')) continue;
    leaveOut(
      cx,
      `reasoning.${key}`,
      key === 'summary' ? 'a translated answer has no reasoning items to summarise' : 'it has no chat equivalent',
    );
  }
  const include = Array.isArray(body.include)
    ? body.include.filter((name) => !(cx.fileSearch === true && name === FILE_SEARCH_RESULTS))
    : [];
  if (include.length > 0) {
    leaveOut(
      cx,
      'include',
      'a translated answer has none of what it asks for (no encrypted reasoning, no logprobs, no built-in tool results)',
    );
  }
  const verbosity = isJsonObject(body.text) ? body.text.verbosity : undefined;
  if (verbosity !== undefined && verbosity !== null) {
    if (cx.carries('verbosity')) chat.verbosity = verbosity;
    else leaveOut(cx, 'text.verbosity', 'no upstream of this model has it');
  }
}
