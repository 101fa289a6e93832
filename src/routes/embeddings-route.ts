import type { FastifyReply, FastifyRequest } from 'fastify';
import { ADMIN, authorizeModel } from '../auth/principal.js';
import type { ChatService } from '../core/pipeline/chat-service.js';
import type { EmbeddingService } from '../core/pipeline/embedding-service.js';
import type { PricedUsage } from '../core/models/pricing.js';
import type { RequestTrace } from '../core/pipeline/trace-contract.js';
import type { EmbeddingsRequestBody } from '../providers/provider-contract.js';
import { EMBEDDINGS_CACHE_RULE, isObjectBody } from '../core/pipeline/answer-cache.js';
import type { EmbeddingsSpec, SurfaceDescriptor } from '../surfaces/descriptor.js';
import type { CallIdempotency } from './call-idempotency.js';
import { callInputOf, recorderOf, sendRecordedAnswer, type AnswerKey, type AnsweredBefore } from './model-call-http.js';
import type { ResponseCache } from './response-cache.js';

/** OpenAI's own embeddings API: the body is the request, the answer passes through or is written in its shape. */
const OPENAI_EMBEDDINGS: EmbeddingsSpec = {
  toEmbeddings: ({ body }) => body as EmbeddingsRequestBody,
  answer: (result, body, usage) =>
    result.kind === 'openai' ? result.body : embeddingsJson(result.vectors, body, usage),
};

/**
/** What an embeddings handler calls, and the surface whose `embed` endpoint it serves (absent: OpenAI's own). */
export interface EmbeddingsHandlerOptions {
  embeddings: EmbeddingService;
  chat: ChatService;
  idempotency: CallIdempotency;
  beginTrace?: ((request: FastifyRequest) => RequestTrace) | undefined;
  cache?: ResponseCache | undefined;
  surface?: { descriptor: SurfaceDescriptor; spec: EmbeddingsSpec };
}

/**
 * POST /v1/embeddings and ?route=embeddings (and a surface's `embed` endpoint, through its descriptor's translation):
 * the same protections as chat (rights, limits, budgets, retries, fallbacks, circuits, Idempotency-Key,
 * X-Upstream-Key, usage records) through EmbeddingService.embed. An OpenAI-compatible upstream's answer passes
 * through as it came; vectors from a translating provider (Gemini) are written in OpenAI's shape, as floats or as
 * base64 (little-endian float32, what the SDKs ask for). `chat` answers what every model route asks (the model's id
 * for the caller's rights, a cache hit's admission).
 */
export function makeEmbeddingsHandler({
  embeddings,
  chat,
  idempotency,
  beginTrace,
  cache,
  surface,
}: EmbeddingsHandlerOptions) {
  const spec = surface?.spec ?? OPENAI_EMBEDDINGS;
  // A vector is a function of its input (nothing is drawn): always cacheable, keyed under the route it was asked on.
  const keyOf = surface?.descriptor.cache.keyOf;
  const answerKey: AnswerKey = surface
    ? {
        rule: { route: surface.descriptor.route, cacheable: (body) => isObjectBody(body) },
        ...(keyOf ? { keyOf } : {}),
      }
    : { rule: EMBEDDINGS_CACHE_RULE };
  const before: AnsweredBefore = { chat, idempotency, ...(cache ? { cache } : {}), answerKey };
  return async function handleEmbeddings(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const body = spec.toEmbeddings(request);
    request.chatModel = body.model;
    authorizeModel(request.principal ?? ADMIN, body.model, chat.canonicalModel(body.model));
    if (beginTrace) request.trace = beginTrace(request);
    const call = callInputOf(request, reply, surface ? undefined : request.rawBody);
    const recording = recorderOf(request, reply, before, body.model, call);
    const recorder = recording instanceof Promise ? await recording : recording;
    if (recorder === 'answered') return reply;
    try {
      const { result, headers, upstream, usage } = await embeddings.embed(body, call);
      request.upstreamName = upstream;
      request.usage = usage;
      const answer = spec.answer(result, body, usage, request);
      return sendRecordedAnswer(request, reply, recorder, headers, answer);
    } catch (error) {
      if (recorder) await idempotency.settleError(recorder, error, request.responseType);
      throw error;
    }
  };
}

/** OpenAI's embeddings list from vectors. */
export function embeddingsJson(
  vectors: readonly number[][],
  body: EmbeddingsRequestBody,
  usage: PricedUsage | undefined,
): string {
  const base64 = body.encoding_format === 'base64';
  const data = vectors.map((vector, index) => ({
    object: 'embedding',
    index,
    embedding: base64 ? float32Base64(vector) : vector,
  }));
  const tokens = usage?.prompt_tokens ?? 0;
  return JSON.stringify({
    object: 'list',
    data,
    model: body.model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}

/** A vector as OpenAI's base64: the float32 values, little-endian, one after another. */
export function float32Base64(vector: readonly number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
}
