import { ERROR_CODES, type ErrorCode } from '../../errors/codes.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { PricedUsage } from '../models/pricing.js';
import type { CallAs, CallingAs, CallResult } from '../pipeline/call-as.js';

/**
 * Texts to vectors through the gateway's own embeddings pipeline (`callAs` on `/v1/embeddings`), for a search's
 * queries and for ingestion's chunks: the caller's rights, model rights, limits, budgets, retries, usage records
 * and cost apply to every vector a vector store holds or is searched with.
 */

/** Texts per embeddings call by default (ingestion's `vector_stores.embed_batch_size`, a search's queries). */
export const EMBED_BATCH_SIZE = 64;
/** Texts one call may carry at most: what `/v1/embeddings` accepts (routes/embeddings-schema.ts). */
export const MAX_EMBED_TEXTS = 2_048;
/** The longest vector taken from an answer (the config's bound for a store's dimension). */
export const MAX_VECTOR_LENGTH = 16_384;
/** The longest error message carried over from a refused call. */
const MAX_MESSAGE_CHARS = 2_000;

export interface EmbedTextsRequest {
  callAs: CallAs;
  /** Who the call is made as (the store's owner). */
  as: CallingAs;
  /** A model of this gateway (the store's `embeddingModel`). */
  model: string;
  /** 1..MAX_EMBED_TEXTS texts (none: no call). */
  texts: readonly string[];
  /** The vectors' length to ask for (OpenAI's `dimensions`); absent: the model's own. */
  dimensions?: number | undefined;
}

export interface EmbeddedTexts {
  /** One per text, in the texts' order, all of one length. */
  vectors: Float32Array[];
  /** What the call cost, as the pipeline settled and recorded it; undefined: nothing settled (a cache hit). */
  usage: PricedUsage | undefined;
}

/**
 * Embeds `texts` in one call. A refused call throws the pipeline's own error (its code, status, details and
 * Retry-After: a spent budget stays `402 budget_exceeded`); an answer that cannot be used (not one vector per text,
 * not numbers, lengths that differ or past MAX_VECTOR_LENGTH) throws `502 upstream_invalid_response` naming what
 * was wrong.
 */
export async function embedTexts(request: EmbedTextsRequest): Promise<EmbeddedTexts> {
  const { texts, model } = request;
  if (texts.length === 0) return { vectors: [], usage: undefined };
  if (texts.length > MAX_EMBED_TEXTS) throw new RangeError(`embedTexts takes at most ${MAX_EMBED_TEXTS} texts`);
  const body = {
    model,
    input: texts,
    encoding_format: 'float',
    ...(request.dimensions !== undefined ? { dimensions: request.dimensions } : {}),
  };
  const result = await request.callAs(request.as, { url: '/v1/embeddings', body: JSON.stringify(body) });
  if (result.status < 200 || result.status > 299) throw refusalOf(result);
  const vectors = vectorsOf(result.body, texts.length, model);
  return { vectors, usage: result.cacheHit ? undefined : result.usage };
}

/**
 * The pipeline's refusal as the GatewayError it was: the code from the pipeline's record (the body's own code when
 * the record has none), the body's message and details (our error shape: on `/v1/embeddings` it also carries
 * OpenAI's `error` object beside them, which is read when ours is missing), the status and Retry-After.
 */
function refusalOf(result: CallResult): GatewayError {
  const parsed = parseJson(result.body);
  const body = isObject(parsed) ? parsed : {};
  const openAi = isObject(body.error) ? body.error : {};
  const code = result.code ?? knownCode(body.code) ?? knownCode(openAi.code);
  const message = typeof body.message === 'string' ? body.message : openAi.message;
  const details = isObject(body.details) ? body.details : {};
  const retryAfter = result.retryAfterMs === undefined ? undefined : Math.ceil(result.retryAfterMs / 1000);
  const options = {
    upstreamStatus: result.status,
    ...(typeof message === 'string' ? { message: message.slice(0, MAX_MESSAGE_CHARS) } : {}),
    ...(retryAfter !== undefined ? { headers: { 'retry-after': String(retryAfter) } } : {}),
  };
  if (code === undefined) return new GatewayError('internal_error', { status: result.status }, options);
  return new GatewayError(code, details, options);
}

function knownCode(value: unknown): ErrorCode | undefined {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value) ? (value as ErrorCode) : undefined;
}

/** The answer's vectors, in the texts' order (by each item's `index` when it has one), checked. */
function vectorsOf(text: string, expected: number, model: string): Float32Array[] {
  const invalid = (reason: string, more: Record<string, unknown> = {}) =>
    new GatewayError(
      'upstream_invalid_response',
      { model, reason, ...more },
      { message: `The embeddings answer cannot be used for the vector store: ${reason}.` },
    );
  const answer = parseJson(text);
  if (!isObject(answer) || !Array.isArray(answer.data)) throw invalid('no data list');
  const data = answer.data as unknown[];
  if (data.length !== expected) throw invalid('not one embedding per text', { expected, got: data.length });
  const vectors: (Float32Array | undefined)[] = new Array<Float32Array | undefined>(expected).fill(undefined);
  let length: number | undefined;
  for (let i = 0; i < data.length; i++) {
    const item = data[i];
    if (!isObject(item)) throw invalid(`data[${i}] is not an object`);
    const at = item.index === undefined ? i : item.index;
    if (typeof at !== 'number' || !Number.isInteger(at) || at < 0 || at >= expected || vectors[at] !== undefined)
      throw invalid(`data[${i}].index is not a free position below ${expected}`);
    const vector = vectorOf(item.embedding);
    if (typeof vector === 'string') throw invalid(`data[${i}].embedding ${vector}`);
    length ??= vector.length;
    if (vector.length !== length)
      throw invalid('embeddings of different lengths', { expected: length, got: vector.length, index: at });
    vectors[at] = vector;
  }
  return vectors as Float32Array[];
}

/** An embedding as floats (a JSON list, or base64 little-endian float32), or what is wrong with it. */
function vectorOf(embedding: unknown): Float32Array | string {
  if (typeof embedding === 'string') {
    // 4 bytes a float, 4 characters per 3 bytes: bounded before decoding.
    if (embedding.length > Math.ceil((MAX_VECTOR_LENGTH * 4) / 3) + 4) return `is longer than ${MAX_VECTOR_LENGTH}`;
    const bytes = Buffer.from(embedding, 'base64');
    if (bytes.length === 0 || bytes.length % 4 !== 0) return 'is not base64 of float32 values';
    const vector = new Float32Array(bytes.length / 4);
    for (let i = 0; i < vector.length; i++) vector[i] = bytes.readFloatLE(i * 4);
    return vector.every(Number.isFinite) ? vector : 'holds a value that is not a finite number';
  }
  if (!Array.isArray(embedding)) return 'is not a list of numbers';
  if (embedding.length === 0) return 'is empty';
  if (embedding.length > MAX_VECTOR_LENGTH) return `is longer than ${MAX_VECTOR_LENGTH}`;
  const vector = new Float32Array(embedding.length);
  for (let i = 0; i < embedding.length; i++) {
    const value = embedding[i] as unknown;
    if (typeof value !== 'number' || !Number.isFinite(value)) return 'holds a value that is not a finite number';
    vector[i] = value;
  }
  return vector.every(Number.isFinite) ? vector : 'holds a value past float32';
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
