import type { ChatRequestBody } from '../../providers/provider-contract.js';
import type {
  GeminiFunctionDeclaration,
  GeminiGenerationConfig,
  GeminiTool,
  GeminiToolConfig,
} from '../../wire/gemini.js';
import { effortOfThinking, jsonSchemaOf, MAX_SCHEMA_DEPTH } from '../../wire/gemini-values.js';
import type { GeminiContext } from './request-parts.js';

/** `generationConfig` keys the translation maps (below). docs/gemini.md has the same table. */
const GENERATION_MAPPED: ReadonlySet<string> = new Set([
  'temperature',
  'topP',
  'maxOutputTokens',
  'stopSequences',
  'candidateCount',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
  'responseMimeType',
  'responseSchema',
  'responseJsonSchema',
  'responseModalities',
  'thinkingConfig',
]);

/** `generationConfig` keys that only tune or hint: left out for a non-Gemini upstream, and named. */
const GENERATION_DROPPED: Readonly<Record<string, string>> = {
  topK: 'top-k sampling has no chat field; the target samples as it does by default',
  responseLogprobs: 'no log probabilities come back from a non-Gemini upstream',
  logprobs: 'no log probabilities come back from a non-Gemini upstream',
  mediaResolution: "how Gemini tokenizes media is Gemini's only",
  routingConfig: "Gemini's model routing is Gemini's only",
  modelSelectionConfig: "Gemini's model selection is Gemini's only",
  enableEnhancedCivicAnswers: "Gemini's only",
};

/** Response MIME types a chat upstream can honour: plain text (the default) and JSON. */
const JSON_TYPE = 'application/json';
const TEXT_TYPE = 'text/plain';

/**
 * `generationConfig` as the chat body's sampling fields (temperature, top_p, max_tokens, stop, n, seed, penalties),
 * structured output (`responseMimeType` JSON with or without a schema: `response_format`; the schema's OpenAPI
 * upper-case types lower-cased) and `reasoning_effort` (`thinkingConfig`). What only tunes is left out, named; what
 * would change the answer and has no chat field (speech, images, another response MIME type) is refused.
 */
export function mapGenerationConfig(
  config: GeminiGenerationConfig,
  chat: ChatRequestBody,
  context: GeminiContext,
): void {
  for (const [key, value] of Object.entries(config)) {
    if (GENERATION_MAPPED.has(key) || value === null || value === undefined) continue;
    const dropped = Object.hasOwn(GENERATION_DROPPED, key) ? GENERATION_DROPPED[key] : undefined;
    if (dropped !== undefined) context.notes?.drop(`generationConfig.${key}`, dropped);
    else
      context.problems.add({
        field: `generationConfig.${key.slice(0, 64)}`,
        problem: 'is not supported when the model is served by a non-Gemini upstream',
      });
  }
  if (config.temperature !== undefined) chat.temperature = config.temperature;
  if (config.topP !== undefined) chat.top_p = config.topP;
  if (config.maxOutputTokens !== undefined) chat.max_tokens = config.maxOutputTokens;
  if (config.stopSequences !== undefined && config.stopSequences.length > 0) chat.stop = config.stopSequences;
  if (config.candidateCount !== undefined) chat.n = config.candidateCount;
  if (config.seed !== undefined) chat.seed = config.seed;
  if (config.presencePenalty !== undefined) chat.presence_penalty = config.presencePenalty;
  if (config.frequencyPenalty !== undefined) chat.frequency_penalty = config.frequencyPenalty;
  const modalities = config.responseModalities?.filter((modality) => modality !== 'TEXT');
  if (modalities !== undefined && modalities.length > 0) {
    context.problems.add({
      field: 'generationConfig.responseModalities',
      problem: 'a non-Gemini upstream answers in text only',
      allowed: ['TEXT'],
    });
  }
  mapResponseFormat(config, chat, context);
  if (config.thinkingConfig !== undefined) {
    const { includeThoughts, thinkingBudget: _budget, thinkingLevel: _level, ...rest } = config.thinkingConfig;
    const effort = effortOfThinking(config.thinkingConfig);
    if (effort !== undefined) chat.reasoning_effort = effort;
    if (includeThoughts === true)
      context.notes?.drop(
        'generationConfig.thinkingConfig.includeThoughts',
        'no thoughts come back from a non-Gemini upstream',
      );
    for (const key of Object.keys(rest))
      context.notes?.drop(
        `generationConfig.thinkingConfig.${key.slice(0, 64)}`,
        'has no equivalent for a non-Gemini upstream',
      );
  }
}

/** `responseMimeType` and a schema (`responseJsonSchema`, else `responseSchema`) as chat's `response_format`. */
function mapResponseFormat(config: GeminiGenerationConfig, chat: ChatRequestBody, context: GeminiContext): void {
  const mime = config.responseMimeType;
  if (mime !== undefined && mime !== JSON_TYPE && mime !== TEXT_TYPE) {
    context.problems.add({
      field: 'generationConfig.responseMimeType',
      problem: `a non-Gemini upstream answers in text or JSON, not "${mime.slice(0, 64)}"`,
      allowed: [TEXT_TYPE, JSON_TYPE],
    });
    return;
  }
  const field = schemaField(config, 'responseJsonSchema', 'responseSchema');
  if (field === undefined) {
    if (mime === JSON_TYPE) chat.response_format = { type: 'json_object' };
    return;
  }
  const schema = jsonSchemaOf(config[field]);
  if (typeof schema !== 'object' || schema === null) {
    const problem =
      schema === undefined
        ? `nests deeper than ${MAX_SCHEMA_DEPTH} levels`
        : 'must be an object schema for a non-Gemini upstream';
    context.problems.add({ field: `generationConfig.${field}`, problem });
    return;
  }
  chat.response_format = { type: 'json_schema', json_schema: { name: 'response', schema } };
}

/**
 * `tools` as chat function tools: each function declaration with its parameters as JSON Schema
 * (`parametersJsonSchema` as it is, or `parameters` with its OpenAPI types lower-cased). Google Search is the chat
 * body's `web_search_options`, the one built-in web search every provider maps to its own. Gemini's other tools
 * (code execution, URL context, file search, Maps...) run on Google's side only and are refused.
 */
export function mapTools(tools: readonly GeminiTool[], chat: ChatRequestBody, context: GeminiContext): void {
  const functions: unknown[] = [];
  tools.forEach((tool, i) => {
    for (const [key, value] of Object.entries(tool)) {
      const at = `tools[${i}].${key.slice(0, 64)}`;
      if (value === null || value === undefined) continue;
      if (key === 'functionDeclarations') {
        tool.functionDeclarations?.forEach((declaration, j) =>
          functions.push(functionTool(declaration, `${at}[${j}]`, context)),
        );
      } else if (key === 'googleSearch' || key === 'googleSearchRetrieval') {
        if (chat.web_search_options === undefined) chat.web_search_options = {};
        else context.notes?.drop(at, 'a second web search tool: the first one is the search');
        if (typeof value === 'object' && Object.keys(value).length > 0)
          context.notes?.drop(`${at}.*`, "the search's settings are Google Search's only");
      } else context.problems.add({ field: at, problem: "Gemini's own tools run on Google's side only" });
    }
  });
  if (functions.length > 0) chat.tools = functions;
}

/** Which of a pair of Gemini's schema fields is given: the JSON Schema one when both are, else the OpenAPI one. */
function schemaField<Field extends string>(
  holder: { readonly [name in Field]?: unknown },
  jsonSchema: Field,
  openApi: Field,
): Field | undefined {
  if (holder[jsonSchema] !== undefined) return jsonSchema;
  return holder[openApi] !== undefined ? openApi : undefined;
}

function functionTool(declaration: GeminiFunctionDeclaration, at: string, context: GeminiContext): unknown {
  const fn: Record<string, unknown> = { name: declaration.name };
  if (typeof declaration.description === 'string') fn.description = declaration.description;
  const field = schemaField(declaration, 'parametersJsonSchema', 'parameters');
  if (field !== undefined) {
    const schema = jsonSchemaOf(declaration[field]);
    if (schema === undefined)
      context.problems.add({ field: `${at}.${field}`, problem: `nests deeper than ${MAX_SCHEMA_DEPTH} levels` });
    else fn.parameters = schema;
  }
  for (const [key, value] of Object.entries(declaration)) {
    if (
      value === null ||
      value === undefined ||
      key === 'name' ||
      key === 'description' ||
      key === 'parameters' ||
      key === 'parametersJsonSchema'
    )
      continue;
    context.notes?.drop(`${at}.${key.slice(0, 64)}`, 'has no equivalent for a non-Gemini upstream');
  }
  return { type: 'function', function: fn };
}

/**
 * `toolConfig.functionCallingConfig` as chat's `tool_choice`: AUTO is `auto`, NONE `none`, ANY `required`, or the
 * one function when ANY allows only one. ANY with several allowed functions is `required` (the others are named as
 * dropped: chat cannot narrow the choice); VALIDATED is `auto` (named: chat has no schema-checked calls).
 */
export function mapToolConfig(config: GeminiToolConfig, chat: ChatRequestBody, context: GeminiContext): void {
  for (const key of Object.keys(config)) {
    if (key !== 'functionCallingConfig')
      context.notes?.drop(`toolConfig.${key.slice(0, 64)}`, 'has no equivalent for a non-Gemini upstream');
  }
  const calling = config.functionCallingConfig;
  const names = calling?.allowedFunctionNames ?? [];
  switch (calling?.mode) {
    case 'AUTO':
      chat.tool_choice = 'auto';
      break;
    case 'NONE':
      chat.tool_choice = 'none';
      return;
    case 'VALIDATED':
      chat.tool_choice = 'auto';
      context.notes?.drop(
        'toolConfig.functionCallingConfig.mode',
        'chat has no schema-checked calls: VALIDATED is sent as AUTO',
      );
      break;
    case 'ANY':
      if (names.length === 1) {
        chat.tool_choice = { type: 'function', function: { name: names[0] } };
        return;
      }
      chat.tool_choice = 'required';
      break;
    default:
      break;
  }
  if (names.length > 0)
    context.notes?.drop(
      'toolConfig.functionCallingConfig.allowedFunctionNames',
      'chat can force one function or any, not a choice among several',
    );
}
