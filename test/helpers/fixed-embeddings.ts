/**
 * A `CallAs` (core/pipeline/call-as.ts) that answers `/v1/embeddings` with fixed vectors for known texts, for tests
 * of what embeds through the pipeline without a gateway (core/retrieval). It records every call; `next` scripts the
 * next answer (a refusal, a broken body). An unknown text fails the test (its vector was never chosen).
 */
import type { CallAs, CallRequest, CallResult, CallingAs } from '../../src/core/pipeline/call-as.js';
import type { PricedUsage } from '../../src/core/models/pricing.js';

export interface FixedEmbeddings {
  callAs: CallAs;
  /** Every call made, with its body parsed. */
  readonly calls: { as: CallingAs; url: string; body: { model: string; input: string[]; dimensions?: number } }[];
  /** Answers the next call with this instead (its missing fields: those of a 200). */
  next(result: Partial<CallResult>): void;
  /** The usage of a call of `n` texts: 2 tokens each, $0.001 a text. */
  usageOf(n: number): PricedUsage;
}

export function fixedEmbeddings(vectors: Record<string, number[]>): FixedEmbeddings {
  const calls: FixedEmbeddings['calls'] = [];
  const scripted: Partial<CallResult>[] = [];
  const usageOf = (n: number): PricedUsage => ({
    prompt_tokens: 2 * n,
    completion_tokens: 0,
    total_tokens: 2 * n,
    cost_usd: 0.001 * n,
  });
  const callAs: CallAs = function answerEmbeddings(as: CallingAs, request: CallRequest) {
    const body = JSON.parse(request.body) as { model: string; input: string[]; dimensions?: number };
    calls.push({ as, url: request.url, body });
    const ok: CallResult = {
      status: 200,
      code: undefined,
      body: '',
      requestId: `req-${calls.length}`,
      usage: usageOf(body.input.length),
      cacheHit: false,
      retryAfterMs: undefined,
      rate: undefined,
    };
    const script = scripted.shift();
    if (script) return Promise.resolve({ ...ok, ...script });
    const data = body.input.map((text, index) => {
      const embedding = vectors[text];
      if (!embedding) throw new Error(`fixed embeddings: no vector for ${JSON.stringify(text)}`);
      return { object: 'embedding', index, embedding };
    });
    const usage = { prompt_tokens: 2 * data.length, total_tokens: 2 * data.length };
    return Promise.resolve({ ...ok, body: JSON.stringify({ object: 'list', data, model: body.model, usage }) });
  };
  return { callAs, calls, next: (result) => void scripted.push(result), usageOf };
}
