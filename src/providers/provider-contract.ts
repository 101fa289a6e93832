/**
 * The one typed contract every provider implements. The core speaks only these types (the OpenAI chat shapes,
 * which are what callers send and receive); a provider translates to and from its own wire format.
 */
import type { NativeApiName } from '../names/api-names.js';

export type ChatRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: ChatRole;
  content?: string | null | ReadonlyArray<Record<string, unknown>>;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

/** A validated chat request. Fields the gateway does not know are kept and passed through to the provider. */
export interface ChatRequestBody {
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  stream?: boolean;
  tools?: unknown[];
  tool_choice?: unknown;
  [passthrough: string]: unknown;
}

/**
 * A call's tokens as the gateway counts them, whichever provider answered (docs/usage.md, "Token parts"):
 * `prompt_tokens` is ALL input, cache reads and cache writes included (OpenAI's `prompt_tokens` already is;
 * Anthropic's `input_tokens` is not, so the gateway adds its cache figures to it); `cache_read_tokens` and
 * `cache_write_tokens` are parts of it (never more than it together), `cache_write_1h_tokens` the part of the writes
 * at the 1-hour TTL. `reasoning_tokens` is part of `completion_tokens`. A part is absent when the upstream reported
 * none (or 0); every part went through saneTokens like the counts.
 */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cache_read_tokens?: number;
  cache_write_tokens?: number;
  cache_write_1h_tokens?: number;
  reasoning_tokens?: number;
  /** What the gateway had to correct in the upstream's figures (src/providers/usage-figures.ts); absent: nothing. */
  [USAGE_ANOMALIES]?: readonly UsageAnomaly[];
}

/**
 * What was wrong with a token count an upstream reported: not a number (a string, an object), below zero, above
 * MAX_USAGE_TOKENS (1e300 and Infinity included), or not whole (12.5); or a part larger than what it is a part of
 * (cache reads over the prompt, reasoning over the completion, prompt + completion over the total). Each is corrected
 * (src/providers/usage-figures.ts).
 */
export type UsageAnomaly = 'not_a_number' | 'negative' | 'too_large' | 'fractional' | 'part_too_large';

/**
 * The key under which a usage carries its anomalies: a symbol, so that no JSON of a usage object (a chunk written
 * to the caller, a stored answer) ever shows it, while a spread copy (`{ ...usage, cost_usd }`) keeps it.
 */
export const USAGE_ANOMALIES: unique symbol = Symbol('usage anomalies');

/** A complete, non-streamed answer in the OpenAI `chat.completion` shape. */
export interface ChatCompletionResult {
  /** The JSON bytes sent to the caller as they are (a pass-through costs no re-serialisation). */
  body: Buffer;
  usage: Usage | undefined;
  /** A natively forwarded answer's ids the upstream keeps (a response and its items, a container): the caller's. */
  serverIds?: readonly string[];
}

/** One `chat.completion.chunk` of a stream. */
export interface ChatCompletionChunk {
  id?: string;
  object: 'chat.completion.chunk';
  created?: number;
  model?: string;
  choices: Array<{
    index: number;
    delta: { role?: string; content?: string | null; tool_calls?: unknown[]; [k: string]: unknown };
    finish_reason: string | null;
    [k: string]: unknown;
  }>;
  usage?: Usage | null;
  [k: string]: unknown;
}

export interface StreamChunk {
  chunk: ChatCompletionChunk;
  /**
   * Carries the usage only and is not sent to the caller: the gateway asked the upstream for usage the caller
   * did not ask for (to correct limits and price the call).
   */
  internal?: boolean;
  /**
   * The gateway's count of the usage this chunk carries, with its parts, when the chunk's own `usage` shows less
   * (a translated chat chunk shows OpenAI's three counts; the cache writes have no place there). Absent: the
   * chunk's `usage` is the count.
   */
  usage?: Usage;
  /** The chunk's JSON on one line, when the provider already has it (saves a JSON.stringify per chunk). */
  json?: string;
  /**
   * Decoded by a frame template of its stream (openai-compatible/chunk-template.ts): all of `json` but the first
   * choice's `delta.content` is the template's, which was found free of the call's keys (chat-scrub.ts then reads
   * only that text).
   */
  templated?: boolean;
  /**
   * A forwarded Responses API event (native path): its `event:` name, `json` its data as the upstream sent it, and
   * `chunk` an empty chat chunk that only carries the usage of the final event.
   */
  event?: string;
  /** The ids the upstream keeps that this forwarded event names (`response.created`...): the caller's. */
  serverIds?: readonly string[];
}

/**
 * The chunks of one upstream read. A burst of events (a fast model, a proxy that buffers) is handed on and
 * written to the caller as one piece: one generator step and one socket write per read instead of per chunk.
 */
export type StreamBatch = readonly StreamChunk[];

/** A validated embeddings request (OpenAI's shape). Unknown fields pass through to an OpenAI-compatible upstream. */
export interface EmbeddingsRequestBody {
  model: string;
  /** A string, strings, or token arrays (the latter only where the upstream accepts them). */
  input: string | string[] | number[] | number[][];
  dimensions?: number;
  encoding_format?: 'float' | 'base64';
  user?: string;
  [passthrough: string]: unknown;
}

/**
 * An embeddings answer: the upstream's own OpenAI-shaped bytes (passed through), or vectors a translating provider
 * read from its own format, which the route writes in OpenAI's shape. `usage` when the upstream reported it.
 */
export type EmbeddingsResult =
  | { kind: 'openai'; body: Buffer; usage: Usage | undefined }
  | { kind: 'vectors'; vectors: number[][]; usage: Usage | undefined };

/** A request forwarded as it is (the native path: Responses, Messages): only what the gateway reads is typed. */
export interface NativeBody {
  model: string;
  input?: unknown;
  stream?: boolean | null;
  max_output_tokens?: number | null;
  max_tokens?: number | null;
  [field: string]: unknown;
}

/** A public API spoken natively by the upstream (OpenAI's Responses, Anthropic's Messages): passed through. */
export interface NativeApi {
  /** The answer's bytes as the upstream sent them, with its usage. */
  complete(body: NativeBody, context: CallContext): Promise<ChatCompletionResult>;
  /** The upstream's events, one batch per read; ends after the API's final event. */
  stream(body: NativeBody, context: CallContext): AsyncIterable<StreamBatch>;
  /** The upstream's own count of a request's input tokens (Anthropic's `count_tokens`), where it has one. */
  countTokens?(body: NativeBody, context: CallContext): Promise<number>;
}

/** The APIs a provider may speak natively besides chat: the names table's entries marked `native`. */
export type { NativeApiName } from '../names/api-names.js';

export interface CallContext {
  /**
   * The caller's X-Upstream-Key, which replaces the provider's configured key for this call only. Whether the key
   * came from the caller also decides whose fault an upstream 401 is (the caller's, or the operator's).
   */
  apiKeyOverride: string | undefined;
  /** Aborted when the caller goes away or the total deadline passes; its reason says which. */
  signal: AbortSignal;
  requestId: string;
  /**
   * The caller's body exactly as received, when the gateway changed nothing in it: a provider that speaks the
   * caller's format forwards these bytes instead of serialising the parsed body again.
   */
  bodyJson: string | undefined;
  /** W3C trace context of this attempt (tracing on only), sent upstream as `traceparent`. */
  traceparent?: string | undefined;
  /** Caller headers a native path forwards (Anthropic's `anthropic-version`, `anthropic-beta`). */
  forwardHeaders?: Readonly<Record<string, string>> | undefined;
  /** The caller's query a native path forwards, `?` included (`?beta=true`), or undefined. */
  forwardQuery?: string | undefined;
  /**
   * The model's `prompt_cache` setting: whether a provider that caches prompts only where told (Anthropic) marks
   * the breakpoints of a translated request itself (docs/usage.md, "Prompt caching"). Absent: `auto`.
   */
  promptCache?: 'auto' | 'off' | undefined;
}

export interface UpstreamModel {
  id: string;
  createdAt: string | undefined;
  ownedBy: string | undefined;
}

/**
 * Chat request fields that not every upstream has: a translating surface (the Responses API) asks whether each
 * upstream of a model carries one (`Provider.chatExtras`) and leaves it out by name where one does not.
 * `web_search_options` is the gateway's one representation of a built-in web search: the Anthropic provider sends
 * Anthropic's web search tool, the Gemini provider Google Search grounding, OpenAI's own chat API takes it as it is.
 * `parallel_tool_calls` means its `false` (one call at a time); `true` is every upstream's default.
 */
export type ChatExtra =
  | 'web_search_options'
  | 'prompt_cache_key'
  | 'service_tier'
  | 'verbosity'
  | 'parallel_tool_calls'
  | 'user'
  | 'safety_identifier';

/** What an OpenAI-compatible server takes: every chat field of OpenAI's API, its web search only where known. */
export const OPENAI_CHAT_EXTRAS: ReadonlySet<ChatExtra> = new Set([
  'prompt_cache_key',
  'service_tier',
  'verbosity',
  'parallel_tool_calls',
  'user',
  'safety_identifier',
]);

export interface Provider {
  /** The upstream's configured name (e.g. "openai"), used in health, logs and error details. */
  readonly name: string;
  readonly kind: string;
  /** Sends a non-streamed chat call; rejects with a GatewayError. */
  chat(body: ChatRequestBody, context: CallContext): Promise<ChatCompletionResult>;
  /**
   * Streams a chat call, one batch at a time: the chunks that one read of the upstream's body carried, in order
   * (never an empty batch). Errors before the first batch reject the first `next()` (the caller can still answer
   * with a plain JSON error); errors after it are thrown mid-iteration as GatewayErrors, after the batch of the
   * chunks that came before them in the same read. The iteration completes only on the provider's own
   * end-of-stream marker: a stream cut short is an error, never a quiet end.
   */
  streamChat(body: ChatRequestBody, context: CallContext): AsyncIterable<StreamBatch>;
  /** The chat fields of ChatExtra this provider carries to its upstream (absent: none). */
  readonly chatExtras?: ReadonlySet<ChatExtra>;
  /** Public APIs the upstream speaks natively (absent: the gateway translates them into chat). */
  readonly native?: Partial<Record<NativeApiName, NativeApi>>;
  /** The upstream's own batch API (absent: a batch's lines are run by the gateway itself). providers/batch-api.ts */
  readonly batches?: NativeBatchApi;
  /**
   * The upstream's own Files API, where the gateway puts a caller's file that a request names by its gateway id
   * (core/files/file-forwarding.ts). Absent: such a file goes inline, as a chat `file` part's `file_data`.
   */
  readonly files?: UpstreamFiles;
  /** Embeds input; absent on a provider that has no embeddings (Anthropic). Rejects with a GatewayError. */
  embed?(body: EmbeddingsRequestBody, context: CallContext): Promise<EmbeddingsResult>;
  /** Lists the upstream's models; used by the models route and as the token-free health check. */
  listModels(signal: AbortSignal): Promise<UpstreamModel[]>;
  /** Whether the health route should probe this provider (a local echo needs no probe). */
  readonly probeable: boolean;
  close(): Promise<void>;
}

/**
 * A provider's own batch API (OpenAI's Files + Batches, Anthropic's Message Batches, Gemini's batchGenerateContent),
 * behind one contract: the gateway's batch engine (core/batches/native-backend.ts) hands it a batch's lines, stores
 * each id it gets back as soon as it has it, polls, and records each line's result exactly as it records a line it
 * ran itself. An implementation speaks its upstream's wire format both ways: it writes each line's request in its
 * upstream's shape and gives each result back in the shape of the line's endpoint (the caller's API).
 */

/** One line of a batch as the provider gets it: the caller's body with the model already renamed to the upstream's. */
export interface NativeBatchRequest {
  /** The line's index in the gateway's batch; the upstream's custom id is derived from it (`line-<index>`). */
  index: number;
  /** The gateway endpoint the line calls (`/v1/chat/completions`, `/v1/messages`...). */
  endpoint: string;
  body: Record<string, unknown>;
}

export interface NativeSubmission {
  /** The gateway's batch id: sent in the upstream batch's metadata (or name), so `find` can recover it after a crash. */
  gatewayBatchId: string;
  /** The endpoint every line calls. */
  endpoint: string;
  /** The lines, read again from the store each time it is called (bounded memory, whatever the batch's size). */
  lines(): AsyncIterable<NativeBatchRequest>;
  /** A file this provider uploaded earlier for this batch (a restart between the upload and the create). */
  uploadedFileId: string | undefined;
  /** Called as soon as an input file is uploaded, before the batch is created: the engine stores the id. */
  onUploaded(fileId: string): Promise<void>;
}

/** What the upstream says of a batch. */
export interface NativeBatchStatus {
  /**
   * `running`: poll again. `ended`: its results can be read (completed, or cancelled / expired with what it did).
   * `failed`: the upstream will give no result (its validation refused the input, say): its lines fail.
   */
  state: 'running' | 'ended' | 'failed';
  /** The upstream's own word for it (`in_progress`, `ended`, `JOB_STATE_SUCCEEDED`...), for logs and errors. */
  upstreamStatus: string;
  /** Why it failed, in the upstream's words (secrets scrubbed), when it did. */
  reason?: string;
}

/** One line's result, as the line's endpoint answers. */
export interface NativeLineResult {
  index: number;
  /** The HTTP status the line's call would have had: 200, or the upstream's error status (500 when it gave none). */
  status: number;
  /** The answer (2xx) or the error, as JSON text in the line's endpoint's format. */
  body: string;
  /** Tokens the line used, as the upstream reported them (checked like any usage figure). */
  usage: Usage | undefined;
  /** The upstream's request id for the line, when it gives one. */
  requestId: string | null;
}

export interface NativeBatchApi {
  /** The gateway endpoints whose lines this API runs (translating where its wire format differs). */
  readonly endpoints: ReadonlySet<string>;
  /** Uploads the input where the API needs a file (reusing `uploadedFileId`), creates the batch: its upstream id. */
  submit(submission: NativeSubmission, signal: AbortSignal): Promise<{ batchId: string; fileId?: string }>;
  /** The upstream batch created for this gateway batch, if there is one (looked up by the id `submit` sent). */
  find(gatewayBatchId: string, signal: AbortSignal): Promise<string | undefined>;
  status(batchId: string, signal: AbortSignal): Promise<NativeBatchStatus>;
  /**
   * Every result the ended batch has, streamed (a line it has no result for is absent). `endpoint` is the endpoint
   * the batch's lines call (an upstream that translates, like Anthropic's, gives its results back in that shape).
   */
  results(batchId: string, signal: AbortSignal, endpoint: string): AsyncIterable<NativeLineResult>;
  /** Asks the upstream to cancel; it ends later (poll `status`), with the results of the lines it did. */
  cancel(batchId: string, signal: AbortSignal): Promise<void>;
  /** Deletes what the gateway uploaded for the batch (input file), once its results are read. Best effort. */
  cleanUp?(fileId: string, signal: AbortSignal): Promise<void>;
}

/** One of the gateway's files, on its way to an upstream's Files API. */
export interface UpstreamFileUpload {
  filename: string;
  bytes: number;
  /** The MIME type to declare (the stored one, or what the bytes are). */
  mimeType: string;
  content: AsyncIterable<Uint8Array>;
  /** How long the upstream should keep it (seconds), where its API takes an expiry. */
  ttlSeconds: number;
}

/** An upstream's Files API (OpenAI's `POST /files`, purpose `user_data`). */
export interface UpstreamFiles {
  /** Uploads the file with the call's key (the caller's X-Upstream-Key or the configured one): the upstream's id. */
  upload(file: UpstreamFileUpload, context: CallContext): Promise<string>;
  /**
   * Deletes the upstream's copy `upstreamFileId` with the call's key; resolves once the upstream no longer has it
   * (its 404 included: already gone), rejects with a GatewayError otherwise (docs/files.md, "Files in requests").
   */
  delete(upstreamFileId: string, context: CallContext): Promise<void>;
}
