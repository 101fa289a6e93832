import { GatewayError } from '../../errors/gateway-error.js';
import { ProblemList } from '../../http/validation-details.js';
import type { EmbeddingsRequestBody, EmbeddingsResult } from '../../providers/provider-contract.js';
import type {
  GeminiBatchEmbedRequest,
  GeminiBatchEmbedResponse,
  GeminiEmbedContentRequest,
  GeminiEmbedContentResponse,
} from '../../wire/gemini.js';
import { isJsonObject } from '../../wire/received.js';
import type { TranslationNotes } from '../translation-notes.js';

/** Fields of an embed request that only hint how to embed: left out for an embedding model not served by Gemini, named. */
const HINTS: Readonly<Record<string, string>> = {
  taskType: "a task type is Gemini's only: the model embeds the text as it is",
  title: "a document title is Gemini's only",
};

/**
 * `:embedContent` (one input) and `:batchEmbedContents` (one per request) as the gateway's embeddings request, for
 * the model the URL names: each content's text parts joined by a line break (an embedding is of text only: an image
 * part is refused), `outputDimensionality` as `dimensions` (one size for the whole call: requests that ask for
 * different sizes are refused), `taskType` and `title` left out (named). A batch request's `model`, when given, must
 * be the URL's, as Gemini requires.
 */
export function embedToEmbeddings(
  body: GeminiEmbedContentRequest,
  model: string,
  notes?: TranslationNotes,
): EmbeddingsRequestBody {
  const request = embeddingsOf([body], model, notes, '');
  return { ...request, input: (request.input as string[])[0] as string };
}

export function batchEmbedToEmbeddings(
  body: GeminiBatchEmbedRequest,
  model: string,
  notes?: TranslationNotes,
): EmbeddingsRequestBody {
  return embeddingsOf(body.requests, model, notes, 'requests');
}

function embeddingsOf(
  requests: readonly GeminiEmbedContentRequest[],
  model: string,
  notes: TranslationNotes | undefined,
  root: string,
): EmbeddingsRequestBody {
  const problems = new ProblemList();
  const invalid = new ProblemList();
  const input: string[] = [];
  let dimensions: number | undefined;
  requests.forEach((request, i) => {
    const at = (field: string) => (root === '' ? field : `${root}[${i}].${field}`);
    if (request.model !== undefined && request.model !== `models/${model}` && request.model !== model) {
      invalid.add({ field: at('model'), problem: `must be the model of the URL, models/${model.slice(0, 200)}` });
    }
    const texts: string[] = [];
    request.content.parts.forEach((part, j) => {
      if (typeof part.text === 'string') texts.push(part.text);
      else
        problems.add({ field: at(`content.parts[${j}]`), problem: 'only text is embedded by a non-Gemini upstream' });
    });
    input.push(texts.join('\n'));
    const size = request.outputDimensionality;
    if (size !== undefined) {
      if (dimensions !== undefined && size !== dimensions)
        problems.add({
          field: at('outputDimensionality'),
          problem: 'one embeddings call has one vector size: send requests of different sizes apart',
        });
      dimensions ??= size;
    }
    for (const [key, value] of Object.entries(request)) {
      if (
        value === undefined ||
        value === null ||
        key === 'model' ||
        key === 'content' ||
        key === 'outputDimensionality'
      )
        continue;
      notes?.drop(
        at(key.slice(0, 64)),
        Object.hasOwn(HINTS, key) ? (HINTS[key] as string) : 'has no equivalent for a non-Gemini upstream',
      );
    }
  });
  if (!invalid.empty) throw new GatewayError('validation_failed', invalid.details());
  if (!problems.empty) throw new GatewayError('capability_not_supported', problems.details());
  return dimensions === undefined ? { model, input } : { model, input, dimensions };
}

/**
 * The vectors of an embeddings answer, in input order: a translating provider's, or those of an OpenAI-shaped
 * answer (`data[].embedding`, placed by `index`). Anything else (another count, a vector that is not all finite
 * numbers, base64) is `upstream_invalid_response`.
 */
export function embeddingVectors(result: EmbeddingsResult, expected: number): number[][] {
  if (result.kind === 'vectors') {
    if (result.vectors.length !== expected)
      throw invalidEmbeddings(`${result.vectors.length} vectors for ${expected} inputs`);
    return result.vectors;
  }
  let data: unknown;
  try {
    data = (JSON.parse(result.body.toString('utf8')) as { data?: unknown } | null)?.data;
  } catch {
    throw invalidEmbeddings('the answer is not JSON');
  }
  if (!Array.isArray(data) || data.length !== expected) throw invalidEmbeddings(`not ${expected} embeddings in data`);
  const vectors: number[][] = new Array<number[]>(expected);
  data.forEach((item: unknown, i) => {
    const index = isJsonObject(item) && typeof item.index === 'number' ? item.index : i;
    const values = isJsonObject(item) ? item.embedding : undefined;
    if (!Number.isInteger(index) || index < 0 || index >= expected || vectors[index] !== undefined)
      throw invalidEmbeddings("the embeddings' indexes are not one per input");
    if (!Array.isArray(values) || !values.every((v) => typeof v === 'number' && Number.isFinite(v)))
      throw invalidEmbeddings('an embedding is not a list of numbers');
    vectors[index] = values as number[];
  });
  return vectors;
}

function invalidEmbeddings(reason: string): GatewayError {
  return new GatewayError('upstream_invalid_response', { reason });
}

/** The answer of `:embedContent`. */
export function embedContentAnswer(vectors: readonly number[][]): GeminiEmbedContentResponse {
  return { embedding: { values: vectors[0] ?? [] } };
}

/** The answer of `:batchEmbedContents`, one embedding per request in order. */
export function batchEmbedAnswer(vectors: readonly number[][]): GeminiBatchEmbedResponse {
  return { embeddings: vectors.map((values) => ({ values })) };
}
