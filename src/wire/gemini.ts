import type { ErrorBody } from '../errors/gateway-error.js';
import { isJsonObject } from './received.js';

/**
 * Google's Gemini API (generativelanguage, `v1beta` and `v1`) as it goes over the wire, typed once for both
 * directions: the Gemini provider builds requests of these types and reads answers as `Received<...>` of them; the
 * Gemini surface reads requests and builds answers. Field names are Google's (camelCase, as its JSON mapping of the
 * protos writes them); what a client sends beyond them is kept by the index signatures and judged by the surface.
 * Also Gemini's error body; the pure value mappings between Gemini's values and chat's are in gemini-values.ts.
 * Nothing here imports the rest of the gateway but the error body type.
 */

// ---------------------------------------------------------------------------------------------------------- request

export type GeminiRole = 'user' | 'model';

export interface GeminiInlineData {
  mimeType: string;
  /** Base64. */
  data: string;
}

export interface GeminiFileData {
  mimeType?: string;
  fileUri: string;
}

/** A call the model makes. Gemini sends no `id` itself; a client may make one up (Gemini CLI: `read_file_<ms>_0`). */
export interface GeminiFunctionCall {
  id?: string;
  name: string;
  args?: Record<string, unknown>;
}

/** A call's result, matched to its call by `id` when the call had one, else by `name` and order. */
export interface GeminiFunctionResponse {
  id?: string;
  name: string;
  response: Record<string, unknown>;
  /** Media the result holds (Gemini 3). */
  parts?: unknown[];
  willContinue?: boolean;
  scheduling?: string;
}

/** One part of a content: exactly one of its data fields, plus the thought marks. */
export interface GeminiPart {
  text?: string;
  /** The part is the model's reasoning (a summary), not its answer. */
  thought?: boolean;
  /** Gemini's opaque signature of a thought or a call, to be sent back with it. */
  thoughtSignature?: string;
  inlineData?: GeminiInlineData;
  fileData?: GeminiFileData;
  functionCall?: GeminiFunctionCall;
  functionResponse?: GeminiFunctionResponse;
  executableCode?: { language?: string; code?: string };
  codeExecutionResult?: { outcome?: string; output?: string };
  videoMetadata?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface GeminiContent {
  /** Absent in `systemInstruction` (and allowed to be absent on a single-turn request: `user`). */
  role?: GeminiRole;
  parts: GeminiPart[];
}

/** OpenAPI 3.0 Schema as Gemini takes it in `parameters` and `responseSchema`: upper-case types, counts as strings. */
export type GeminiSchemaType =
  'TYPE_UNSPECIFIED' | 'STRING' | 'NUMBER' | 'INTEGER' | 'BOOLEAN' | 'ARRAY' | 'OBJECT' | 'NULL';

export interface GeminiSchema {
  type?: GeminiSchemaType;
  format?: string;
  title?: string;
  description?: string;
  nullable?: boolean;
  enum?: string[];
  items?: GeminiSchema;
  properties?: Record<string, GeminiSchema>;
  required?: string[];
  propertyOrdering?: string[];
  anyOf?: GeminiSchema[];
  minItems?: string;
  maxItems?: string;
  minLength?: string;
  maxLength?: string;
  minProperties?: string;
  maxProperties?: string;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  default?: unknown;
  example?: unknown;
}

export interface GeminiFunctionDeclaration {
  name: string;
  description?: string;
  /** OpenAPI Schema (upper-case types). */
  parameters?: GeminiSchema;
  /** JSON Schema, as callers write it; exclusive with `parameters`. */
  parametersJsonSchema?: unknown;
  response?: GeminiSchema;
  responseJsonSchema?: unknown;
  behavior?: 'UNSPECIFIED' | 'BLOCKING' | 'NON_BLOCKING';
}

/** One tool: function declarations, or one of Gemini's own tools (run on Google's side). */
export interface GeminiTool {
  functionDeclarations?: GeminiFunctionDeclaration[];
  googleSearch?: Record<string, unknown>;
  googleSearchRetrieval?: Record<string, unknown>;
  codeExecution?: Record<string, unknown>;
  urlContext?: Record<string, unknown>;
  [tool: string]: unknown;
}

export type GeminiFunctionCallingMode = 'MODE_UNSPECIFIED' | 'AUTO' | 'ANY' | 'NONE' | 'VALIDATED';

export interface GeminiToolConfig {
  functionCallingConfig?: { mode?: GeminiFunctionCallingMode; allowedFunctionNames?: string[] };
  retrievalConfig?: Record<string, unknown>;
  [field: string]: unknown;
}

export type GeminiThinkingLevel = 'THINKING_LEVEL_UNSPECIFIED' | 'MINIMAL' | 'LOW' | 'MEDIUM' | 'HIGH';

/** Gemini 3 and later take a level, 2.5 a budget in tokens (0: off where allowed, -1: the model decides); not both. */
export interface GeminiThinkingConfig {
  includeThoughts?: boolean;
  thinkingBudget?: number;
  thinkingLevel?: GeminiThinkingLevel;
}

export interface GeminiGenerationConfig {
  temperature?: number;
  topP?: number;
  topK?: number;
  candidateCount?: number;
  maxOutputTokens?: number;
  stopSequences?: string[];
  presencePenalty?: number;
  frequencyPenalty?: number;
  seed?: number;
  responseMimeType?: string;
  /** OpenAPI Schema (upper-case types). */
  responseSchema?: GeminiSchema;
  /** JSON Schema; exclusive with `responseSchema`. Gemini CLI writes upper-case types in it too. */
  responseJsonSchema?: unknown;
  responseModalities?: string[];
  responseLogprobs?: boolean;
  logprobs?: number;
  thinkingConfig?: GeminiThinkingConfig;
  [field: string]: unknown;
}

export interface GeminiSafetySetting {
  category: string;
  threshold: string;
}

/** `POST .../models/{model}:generateContent` and `:streamGenerateContent`: the model is in the path. */
export interface GeminiGenerateRequest {
  contents: GeminiContent[];
  systemInstruction?: GeminiContent;
  tools?: GeminiTool[];
  toolConfig?: GeminiToolConfig;
  generationConfig?: GeminiGenerationConfig;
  safetySettings?: GeminiSafetySetting[];
  /** `cachedContents/<id>`: a prompt prefix stored on Google's side. */
  cachedContent?: string;
  labels?: Record<string, string>;
  serviceTier?: string;
  store?: boolean;
  [field: string]: unknown;
}

// --------------------------------------------------------------------------------------------------------- response

export type GeminiFinishReason =
  | 'FINISH_REASON_UNSPECIFIED'
  | 'STOP'
  | 'MAX_TOKENS'
  | 'SAFETY'
  | 'RECITATION'
  | 'LANGUAGE'
  | 'OTHER'
  | 'BLOCKLIST'
  | 'PROHIBITED_CONTENT'
  | 'SPII'
  | 'MALFORMED_FUNCTION_CALL'
  | 'IMAGE_SAFETY'
  | 'UNEXPECTED_TOOL_CALL'
  | 'TOO_MANY_TOOL_CALLS'
  | 'IMAGE_PROHIBITED_CONTENT'
  | 'NO_IMAGE'
  | 'IMAGE_RECITATION'
  | 'IMAGE_OTHER'
  | 'CONTINUATION'
  | 'MALFORMED_RESPONSE';

export interface GeminiCandidate {
  content?: GeminiContent;
  finishReason?: GeminiFinishReason;
  finishMessage?: string;
  index?: number;
  safetyRatings?: unknown[];
  citationMetadata?: unknown;
  groundingMetadata?: unknown;
}

export interface GeminiModalityTokenCount {
  modality: string;
  tokenCount: number;
}

/**
 * Token counts. `promptTokenCount` is all input, the cached content included (`cachedContentTokenCount` is part of
 * it); `candidatesTokenCount` the answer without the thoughts, `thoughtsTokenCount` the thoughts;
 * `totalTokenCount` = prompt + candidates + thoughts + toolUsePrompt. In a stream, each event's figures are the
 * totals so far.
 */
export interface GeminiUsageMetadata {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  totalTokenCount?: number;
  cachedContentTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
  promptTokensDetails?: GeminiModalityTokenCount[];
  candidatesTokensDetails?: GeminiModalityTokenCount[];
}

export interface GeminiPromptFeedback {
  blockReason?: string;
  blockReasonMessage?: string;
  safetyRatings?: unknown[];
}

/** The answer of `generateContent`, and each event (or array element) of `streamGenerateContent`. */
export interface GeminiGenerateResponse {
  candidates?: GeminiCandidate[];
  promptFeedback?: GeminiPromptFeedback;
  usageMetadata?: GeminiUsageMetadata;
  modelVersion?: string;
  responseId?: string;
}

// ----------------------------------------------------------------------------------- countTokens, embeddings, models

/** `:countTokens`: `contents`, or a whole `generateContentRequest` (with its `model`); not both. */
export interface GeminiCountTokensRequest {
  contents?: GeminiContent[];
  generateContentRequest?: GeminiGenerateRequest & { model?: string };
}

export interface GeminiCountTokensResponse {
  totalTokens: number;
  cachedContentTokenCount?: number;
  promptTokensDetails?: GeminiModalityTokenCount[];
}

/** `:embedContent`, and each of `:batchEmbedContents`'s `requests` (whose `model` must be the path's). */
export interface GeminiEmbedContentRequest {
  model?: string;
  content: GeminiContent;
  taskType?: string;
  title?: string;
  outputDimensionality?: number;
  [field: string]: unknown;
}

export interface GeminiBatchEmbedRequest {
  requests: GeminiEmbedContentRequest[];
}

export interface GeminiEmbedding {
  values: number[];
}

export interface GeminiEmbedContentResponse {
  embedding: GeminiEmbedding;
}

export interface GeminiBatchEmbedResponse {
  embeddings: GeminiEmbedding[];
}

/** One model of `GET .../models` and `GET .../models/{model}`. */
export interface GeminiModel {
  /** `models/<id>`. */
  name: string;
  displayName?: string;
  description?: string;
  inputTokenLimit?: number;
  outputTokenLimit?: number;
  supportedGenerationMethods: string[];
}

export interface GeminiListModelsResponse {
  models: GeminiModel[];
  /** Absent on the last page. */
  nextPageToken?: string;
}

// ------------------------------------------------------------------------------------------------------------ errors

/** google.rpc.Code names, as Gemini's `error.status` carries them. */
export type GeminiStatus =
  | 'CANCELLED'
  | 'UNKNOWN'
  | 'INVALID_ARGUMENT'
  | 'DEADLINE_EXCEEDED'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'PERMISSION_DENIED'
  | 'UNAUTHENTICATED'
  | 'RESOURCE_EXHAUSTED'
  | 'FAILED_PRECONDITION'
  | 'ABORTED'
  | 'OUT_OF_RANGE'
  | 'UNIMPLEMENTED'
  | 'INTERNAL'
  | 'UNAVAILABLE'
  | 'DATA_LOSS';

export const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';
export const RETRY_INFO_TYPE = 'type.googleapis.com/google.rpc.RetryInfo';
export const BAD_REQUEST_TYPE = 'type.googleapis.com/google.rpc.BadRequest';

/** The `details` entries the gateway writes (google.rpc.ErrorInfo's metadata values are strings). */
export type GeminiErrorDetail =
  | { '@type': typeof ERROR_INFO_TYPE; reason: string; domain: string; metadata: Record<string, string> }
  | { '@type': typeof RETRY_INFO_TYPE; retryDelay: string }
  | { '@type': typeof BAD_REQUEST_TYPE; fieldViolations: Array<{ field: string; description: string }> };

export interface GeminiError {
  /** The HTTP status. */
  code: number;
  message: string;
  status: GeminiStatus;
  details?: GeminiErrorDetail[];
}

/** Gemini's error body; also one event of a stream that failed (`data: {"error": ...}`). */
export interface GeminiErrorBody {
  error: GeminiError;
}

/**
 * HTTP status → google.rpc status, the canonical mapping (google/rpc/code.proto; Google's troubleshooting page for
 * the Gemini API): another 4xx is FAILED_PRECONDITION, another 5xx INTERNAL.
 */
const STATUS_BY_HTTP: Readonly<Record<number, GeminiStatus>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  416: 'OUT_OF_RANGE',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

export function geminiStatusOf(httpStatus: number): GeminiStatus {
  const status = STATUS_BY_HTTP[httpStatus];
  if (status !== undefined) return status;
  if (httpStatus >= 500) return 'INTERNAL';
  return httpStatus >= 400 ? 'FAILED_PRECONDITION' : 'UNKNOWN';
}

/** The domain of the gateway's ErrorInfo (Google's own is `googleapis.com`). */
export const GATEWAY_ERROR_DOMAIN = 'llm-gateway';

/**
 * The gateway's error body (`{code, message, details}`, the one shape of every error) with Gemini's `error` object
 * beside it, for the Gemini paths, JSON answers and stream events alike:
 * - `error.code` the HTTP status, `error.status` its google.rpc name, `error.message` our message;
 * - `error.details`: a google.rpc.ErrorInfo whose `reason` is our code in capitals and whose metadata holds our code;
 *   a google.rpc.BadRequest naming each field of a 400 (`details.errors`); a google.rpc.RetryInfo when the answer
 *   says when to retry (`Retry-After` in seconds), which Gemini CLI waits for, and gives up on past 300 s.
 */
export function withGeminiError(
  body: ErrorBody,
  status: number,
  headers?: Readonly<Record<string, string>>,
): ErrorBody & GeminiErrorBody {
  const details: GeminiErrorDetail[] = [
    {
      '@type': ERROR_INFO_TYPE,
      reason: body.code.toUpperCase(),
      domain: GATEWAY_ERROR_DOMAIN,
      metadata: { code: body.code },
    },
  ];
  const violations = fieldViolations(body.details.errors);
  if (violations.length > 0) details.push({ '@type': BAD_REQUEST_TYPE, fieldViolations: violations });
  const retryAfter = headers?.['retry-after'];
  if (retryAfter !== undefined && /^\d{1,9}$/.test(retryAfter))
    details.push({ '@type': RETRY_INFO_TYPE, retryDelay: `${Number(retryAfter)}s` });
  return { ...body, error: { code: status, message: body.message, status: geminiStatusOf(status), details } };
}

/** A 400's named problems (`details.errors`: `{field, problem}`) as google.rpc.BadRequest field violations. */
function fieldViolations(errors: unknown): Array<{ field: string; description: string }> {
  if (!Array.isArray(errors)) return [];
  const out: Array<{ field: string; description: string }> = [];
  for (const entry of errors.slice(0, 50) as unknown[]) {
    if (isJsonObject(entry) && typeof entry.field === 'string' && typeof entry.problem === 'string')
      out.push({ field: entry.field, description: entry.problem });
  }
  return out;
}
