import { GatewayError } from '../../errors/gateway-error.js';
import type { EmbeddingsRequestBody } from '../provider-contract.js';
import type { GeminiBatchEmbedRequest, GeminiBatchEmbedResponse, GeminiEmbedding } from '../../wire/gemini.js';
import { received } from '../../wire/received.js';

/** An embeddings request as Gemini's `batchEmbedContents` body (one request per input text). */
export function toGeminiEmbedRequest(body: EmbeddingsRequestBody, model: string): GeminiBatchEmbedRequest {
  const texts = typeof body.input === 'string' ? [body.input] : body.input;
  if (!texts.every((t): t is string => typeof t === 'string')) {
    throw new GatewayError('capability_not_supported', {
      field: 'input',
      problem: 'Gemini embeds text only: send strings, not token arrays',
    });
  }
  return {
    requests: texts.map((text) => ({
      model: `models/${model}`,
      content: { parts: [{ text }] },
      ...(body.dimensions !== undefined ? { outputDimensionality: body.dimensions } : {}),
    })),
  };
}

/** The vectors of a `batchEmbedContents` answer, in input order; undefined when it is not one. */
export function fromGeminiEmbedResponse(value: unknown, expected: number): number[][] | undefined {
  const embeddings = received<GeminiBatchEmbedResponse>(value)?.embeddings;
  if (!Array.isArray(embeddings) || embeddings.length !== expected) return undefined;
  const vectors: number[][] = [];
  for (const embedding of embeddings) {
    const values = received<GeminiEmbedding>(embedding)?.values;
    if (!Array.isArray(values) || !values.every((v) => typeof v === 'number' && Number.isFinite(v))) return undefined;
    vectors.push(values as number[]);
  }
  return vectors;
}
