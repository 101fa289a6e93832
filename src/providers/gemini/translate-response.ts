import { GatewayError } from '../../errors/gateway-error.js';
import { scrubCut } from '../../secrets/redact.js';
import { upstreamFieldDetails } from '../upstream-http-error.js';
import { chatUsageOf } from '../usage-shapes.js';
import type { ChatCompletionChunk, ToolCall, Usage, UsageAnomaly } from '../provider-contract.js';
import { chatChunk, type ChunkDelta } from '../chat-chunk.js';
import { saneTokens, usageFrom, withParts } from '../usage-figures.js';
import type { ChatCompletion, CompletionChoice } from '../completion-json.js';
import type {
  GeminiCandidate,
  GeminiError,
  GeminiGenerateResponse,
  GeminiPart,
  GeminiPromptFeedback,
  GeminiUsageMetadata,
} from '../../wire/gemini.js';
import { chatFinishReasonOf } from '../../wire/gemini-values.js';
import { isJsonObject, received, type Received } from '../../wire/received.js';

/**
 * Gemini's `usageMetadata` as the gateway's usage (thoughts count as completion and are its reasoning part), each
 * figure checked; a total below prompt + completion is their sum (`part_too_large`).
 */
export function usageOf(metadata: unknown): Usage | undefined {
  if (typeof metadata !== 'object' || metadata === null) return undefined;
  const m = metadata as Received<GeminiUsageMetadata>;
  const found: UsageAnomaly[] = [];
  const thoughts = saneTokens(m.thoughtsTokenCount, found);
  const completion = saneTokens(m.candidatesTokenCount, found) + thoughts;
  // Gemini's promptTokenCount already counts the cached content (cachedContentTokenCount is part of it).
  const prompt = saneTokens(m.promptTokenCount, found);
  const total = saneTokens(m.totalTokenCount, found);
  if (m.totalTokenCount != null && total < prompt + completion) found.push('part_too_large');
  const usage = usageFrom(prompt, completion, total, found);
  return withParts(usage, { cacheRead: saneTokens(m.cachedContentTokenCount, found), reasoning: thoughts });
}

type Candidate = Received<GeminiCandidate>;
type Response = Received<GeminiGenerateResponse>;

/** A prompt refused by the safety filter has no candidates and says why in `promptFeedback`. */
export function throwIfBlocked(
  response: Response,
  upstream: string,
  secrets: ReadonlyArray<string | undefined> = [],
): void {
  const feedback = received<GeminiPromptFeedback>(response.promptFeedback);
  if (
    feedback?.blockReason !== undefined &&
    (!Array.isArray(response.candidates) || response.candidates.length === 0)
  ) {
    throw new GatewayError('upstream_content_blocked', {
      upstream,
      reason: scrubCut(
        typeof feedback.blockReason === 'string' ? feedback.blockReason : JSON.stringify(feedback.blockReason),
        secrets,
        200,
      ),
      ...upstreamFieldDetails({ upstream_message: feedback.blockReasonMessage }, secrets),
    });
  }
}

/**
 * Text and function calls of one candidate (whole answer or stream event); calls get ids (Gemini's own when it sends
 * one). What is not the shape Gemini documents carries nothing to translate and is skipped, as the OpenAI-compatible
 * answers are normalised (src/providers/openai-compatible/normalise-answer.ts): a `content` or a part that is not an
 * object, `parts` that is not an array, a `functionCall` that is not an object; a call's `name` or `id` that is not
 * a string is absent. `args` that are not an object are passed on as their JSON text, which the Responses and
 * Messages surfaces then refuse (src/surfaces/tool-arguments.ts).
 */
function readParts(
  candidate: Candidate,
  idPrefix: string,
  firstCallIndex: number,
): { text: string; calls: ToolCall[] } {
  let text = '';
  const calls: ToolCall[] = [];
  const parts = isJsonObject(candidate.content) ? candidate.content.parts : undefined;
  if (!Array.isArray(parts)) return { text, calls };
  for (const item of parts as unknown[]) {
    const part = received<GeminiPart>(item);
    if (!part) continue;
    if (typeof part.text === 'string' && part.thought !== true) text += part.text;
    const call = part.functionCall;
    if (isJsonObject(call)) {
      const id = typeof call.id === 'string' ? call.id : `${idPrefix}_${firstCallIndex + calls.length}`;
      calls.push({
        id,
        type: 'function',
        function: { name: typeof call.name === 'string' ? call.name : '', arguments: JSON.stringify(call.args ?? {}) },
      });
    }
  }
  return { text, calls };
}

/** What a Gemini answer is translated with: the model asked for, the upstream, the chat answer's id and time. */
export interface GeminiAnswerContext {
  upstreamModel: string;
  upstream: string;
  id: string;
  created: number;
  /** The keys of the call: scrubbed from whatever the upstream's errors say. */
  secrets?: ReadonlyArray<string | undefined>;
}

/** A `generateContent` answer as an OpenAI `chat.completion` (pure), one choice per candidate. */
export function fromGeminiResponse(
  response: unknown,
  { upstreamModel, upstream, id, created, secrets = [] }: GeminiAnswerContext,
): { completion: ChatCompletion; usage: Usage | undefined } | undefined {
  if (typeof response !== 'object' || response === null) return undefined;
  const r = response as Response;
  throwIfBlocked(r, upstream, secrets);
  if (!Array.isArray(r.candidates)) return undefined;
  // A candidate that is not an object is dropped, as a chat choice that is not one is.
  const choices = (r.candidates as unknown[]).filter(isJsonObject).map((candidate: Candidate, i): CompletionChoice => {
    const { text, calls } = readParts(candidate, `call_${id}_${i}`, 0);
    const message: CompletionChoice['message'] = {
      role: 'assistant',
      content: calls.length > 0 && text === '' ? null : text,
    };
    if (calls.length > 0) message.tool_calls = calls;
    return {
      index: typeof candidate.index === 'number' ? candidate.index : i,
      message,
      logprobs: null,
      finish_reason: chatFinishReasonOf(candidate.finishReason, calls.length > 0) ?? 'stop',
    };
  });
  const usage = usageOf(r.usageMetadata);
  const completion: ChatCompletion = {
    id,
    object: 'chat.completion',
    created,
    model: typeof r.modelVersion === 'string' ? r.modelVersion : upstreamModel,
    choices,
  };
  if (usage) completion.usage = chatUsageOf(usage);
  return { completion, usage };
}

/**
 * Gemini's stream (`streamGenerateContent?alt=sse`: each event a whole GenerateContentResponse holding the new
 * text) as chat chunks. Gemini sends no end marker: the stream is complete when a candidate has finished
 * (`finishReason`) and the connection then ends; `finished` says so.
 */
export class GeminiStreamTranslator {
  finished = false;
  private started = false;
  private usage: Usage | undefined;
  private calls = 0;
  private calledTools = false;
  private model: string;
  private readonly id: string;
  private readonly created: number;
  private readonly upstream: string;
  private readonly includeUsage: boolean;
  private readonly secrets: ReadonlyArray<string | undefined>;

  constructor({
    upstreamModel,
    id,
    created,
    upstream,
    includeUsage,
    secrets = [],
  }: GeminiAnswerContext & { includeUsage: boolean }) {
    this.model = upstreamModel;
    this.id = id;
    this.created = created;
    this.upstream = upstream;
    this.includeUsage = includeUsage;
    this.secrets = secrets;
  }

  translate(data: string): ChatCompletionChunk[] {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      throw new GatewayError('upstream_stream_malformed', { upstream: this.upstream, reason: 'an event is not JSON' });
    }
    const response = received<GeminiGenerateResponse & { error: unknown }>(parsed);
    if (!response)
      throw new GatewayError('upstream_stream_malformed', {
        upstream: this.upstream,
        reason: 'an event is not a JSON object',
      });
    if (response.error !== undefined) {
      const error: Received<GeminiError> = received<GeminiError>(response.error) ?? {};
      throw new GatewayError('upstream_stream_error', {
        upstream: this.upstream,
        ...upstreamFieldDetails({ upstream_type: error.status, upstream_message: error.message }, this.secrets),
      });
    }
    throwIfBlocked(response, this.upstream, this.secrets);
    if (typeof response.modelVersion === 'string') this.model = response.modelVersion;
    this.usage = usageOf(response.usageMetadata) ?? this.usage;
    const chunks: ChatCompletionChunk[] = [];
    if (!this.started) {
      this.started = true;
      chunks.push(this.chunk({ role: 'assistant', content: '' }));
    }
    const first: unknown = Array.isArray(response.candidates) ? response.candidates[0] : undefined;
    const candidate = received<GeminiCandidate>(first);
    if (candidate) {
      const { text, calls } = readParts(candidate, `call_${this.id}_0`, this.calls);
      if (text !== '') chunks.push(this.chunk({ content: text }));
      for (const call of calls) {
        chunks.push(this.chunk({ tool_calls: [{ index: this.calls, ...call }] }));
        this.calls += 1;
        this.calledTools = true;
      }
      const finish = chatFinishReasonOf(candidate.finishReason, this.calledTools);
      if (finish) {
        this.finished = true;
        chunks.push(this.chunk({}, finish));
      }
    }
    return chunks;
  }

  /** The usage chunk that ends a stream whose caller asked for usage. */
  final(): ChatCompletionChunk[] {
    if (!this.includeUsage || !this.usage) return [];
    return [{ ...this.chunk({}), choices: [], usage: this.usage }];
  }

  private chunk(delta: ChunkDelta, finishReason: string | null = null): ChatCompletionChunk {
    return chatChunk(this.id, this.created, this.model, delta, finishReason);
  }
}
