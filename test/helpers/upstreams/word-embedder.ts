/**
 * A mock of OpenAI's embeddings endpoint whose vectors mean something: each text's words (lower-cased letters and
 * digits) hashed into `dimensions` buckets, counted, and scaled to unit length, so texts sharing words are close by
 * cosine and a search finds the passage that holds the query's words. A real node:http server speaking OpenAI's
 * wire (`POST /v1/embeddings`, floats or base64, usage in tokens = words); it records every request, and can be
 * told to refuse the next calls (`refuse`) with a status and body of OpenAI's.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface WordEmbedder {
  /** `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  /** Every embeddings request's parsed body, in order. */
  requests: { model: string; input: string[]; dimensions?: number }[];
  /** The inputs embedded so far (all requests). */
  embedded(): number;
  /** The next `count` calls are answered `status` with OpenAI's error body (e.g. 429 with Retry-After 1). */
  refuse(count: number, status: number, headers?: Record<string, string>): void;
  close(): Promise<void>;
}

const WORD = /[\p{L}\p{N}]+/gu;

/** FNV-1a of a word: its bucket. */
function bucketOf(word: string, dimensions: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < word.length; i++) {
    hash ^= word.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % dimensions;
}

/** The unit-length bag-of-words vector of `text` (a text without words gets the first axis). */
export function wordVector(text: string, dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const match of text.toLowerCase().matchAll(WORD)) vector[bucketOf(match[0], dimensions)]! += 1;
  const norm = Math.hypot(...vector);
  if (norm === 0) {
    vector[0] = 1;
    return vector;
  }
  return vector.map((v) => v / norm);
}

export async function startWordEmbedder(
  options: {
    dimensions?: number;
    /** Each answer waits this long (a slower model). */
    delayMs?: number;
    /** Models that ignore `dimensions` (always the default), as a model without the parameter would answer. */
    fixedModels?: readonly string[];
  } = {},
): Promise<WordEmbedder> {
  const defaultDimensions = options.dimensions ?? 64;
  const requests: WordEmbedder['requests'] = [];
  let count = 0;
  let refusals: { left: number; status: number; headers: Record<string, string> } | undefined;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/embeddings') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'not here', type: 'invalid_request_error' } }));
        return;
      }
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as {
        model: string;
        input: string | string[];
        dimensions?: number;
        encoding_format?: string;
      };
      const input = typeof body.input === 'string' ? [body.input] : body.input;
      requests.push({ model: body.model, input, ...(body.dimensions ? { dimensions: body.dimensions } : {}) });
      if (refusals && refusals.left > 0) {
        refusals.left--;
        res.writeHead(refusals.status, { 'content-type': 'application/json', ...refusals.headers });
        res.end(JSON.stringify({ error: { message: 'refused by the mock', type: 'rate_limit_error', code: null } }));
        return;
      }
      const fixed = options.fixedModels?.includes(body.model) === true;
      const dimensions = (fixed ? undefined : body.dimensions) ?? defaultDimensions;
      let tokens = 0;
      const data = input.map((text, index) => {
        tokens += (text.match(WORD) ?? []).length;
        count++;
        const vector = wordVector(text, dimensions);
        if (body.encoding_format !== 'base64') return { object: 'embedding', index, embedding: vector };
        return {
          object: 'embedding',
          index,
          embedding: Buffer.from(new Float32Array(vector).buffer).toString('base64'),
        };
      });
      const answer = JSON.stringify({
        object: 'list',
        data,
        model: body.model,
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      });
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(answer);
      }, options.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    embedded: () => count,
    refuse(left, status, headers = {}) {
      refusals = { left, status, headers };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
