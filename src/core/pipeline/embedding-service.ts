import { GatewayError } from '../../errors/gateway-error.js';
import type { EmbeddingsRequestBody, EmbeddingsResult } from '../../providers/provider-contract.js';
import type { CallPipeline } from './call-pipeline.js';
import type { CallInput } from './model-call.js';
import type { RoutePlan } from '../models/model-router.js';
import type { PricedUsage } from '../models/pricing.js';
import { estimateInputTokens } from '../tokens/token-estimate.js';

export interface CompletedEmbeddings {
  result: EmbeddingsResult;
  /** RateLimit-* headers for the answer. */
  headers: Record<string, string>;
  /** The upstream that answered. */
  upstream: string;
  usage: PricedUsage | undefined;
}

/**
 * Embeddings, free of HTTP: one ModelCall of the CallPipeline (the same plan, admission, retries, fallbacks and
 * circuits as a chat call) over the targets whose provider has embeddings. The admission's estimate is the input's
 * tokens and no completion; the usage is the upstream's, or that estimate when it reports none (Gemini).
 */
export class EmbeddingService {
  constructor(private readonly calls: CallPipeline) {}

  async embed(body: EmbeddingsRequestBody, input: CallInput): Promise<CompletedEmbeddings> {
    this.calls.requireType(body.model, 'embedding');
    const call = this.calls.plan(body.model, input, withEmbeddings);
    const estimate = estimateInputTokens(body.input);
    if (call.admits) await call.admit({ prompt: estimate, maxTokens: 0 });
    const answered = await call.run((target, scope, trace) => {
      const unchanged = target.upstreamModel === body.model;
      const upstreamBody = unchanged ? body : { ...body, model: target.upstreamModel };
      const embed = target.provider.embed?.bind(target.provider);
      if (!embed)
        throw new GatewayError('capability_not_supported', {
          field: 'model',
          problem: 'its upstream has no embeddings',
          upstream: target.upstream,
        });
      return embed(upstreamBody, call.contextFor(target, scope, trace, unchanged));
    });
    const usage = call.settle(
      answered.value.usage ?? { prompt_tokens: estimate, completion_tokens: 0, total_tokens: estimate },
    );
    return { result: answered.value, headers: call.headers, upstream: answered.target.upstream, usage };
  }
}

/** The model's targets whose provider has embeddings; a 400 naming the upstream when none has. */
function withEmbeddings(plan: RoutePlan, model: string): RoutePlan {
  const candidates = plan.candidates.filter((target) => typeof target.provider.embed === 'function');
  const first = plan.candidates[0];
  if (candidates.length === 0 && first) {
    throw new GatewayError('capability_not_supported', {
      field: 'model',
      problem: `the upstream serving "${model.slice(0, 200)}" has no embeddings API`,
      upstream: first.upstream,
      kind: first.provider.kind,
    });
  }
  return { ...plan, candidates };
}
