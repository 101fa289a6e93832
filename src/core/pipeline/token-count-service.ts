import { GatewayError } from '../../errors/gateway-error.js';
import type { ChatRequestBody, NativeApiName, NativeBody } from '../../providers/provider-contract.js';
import type { ClientWatch } from './call-scope.js';
import type { CallPipeline } from './call-pipeline.js';
import { countPromptTokens } from '../tokens/context-window.js';
import type { CallInput } from './model-call.js';

/**
 * The input tokens of a request of a surface's API, free of HTTP: counted by the model's upstream that speaks that
 * API natively when it has one (Anthropic for a Messages request: its count is what it bills; one ModelCall of the
 * CallPipeline, with retries, fallbacks and circuits and no admission), else by the gateway on the request's chat
 * form (core/tokens/context-window.ts: OpenAI families with their tokenizer on its own thread, others by the documented
 * estimate).
 */
export class TokenCountService {
  constructor(private readonly calls: CallPipeline) {}

  /** Whether an upstream of the model counts the tokens itself (it speaks `api` natively: the Messages API). */
  countedUpstream(api: NativeApiName, model: string): boolean {
    return this.calls.forwardsNatively(api, model);
  }

  /** The upstream's count of a request of `api` (a Messages request). */
  async countUpstream(api: NativeApiName, body: NativeBody, input: CallInput): Promise<number> {
    const call = this.calls.planNative(api, body.model, input);
    const answered = await call.run((target, scope, trace) => {
      const upstreamBody = target.upstreamModel === body.model ? body : { ...body, model: target.upstreamModel };
      const count = target.provider.native?.[api]?.countTokens;
      if (!count)
        throw new GatewayError('capability_not_supported', {
          field: 'model',
          problem: 'its upstream cannot count tokens',
          upstream: target.upstream,
        });
      return count(upstreamBody, call.contextFor(target, scope, trace, upstreamBody === body));
    });
    call.settle(undefined);
    return answered.value;
  }

  /** The gateway's count of a chat request's prompt, with the tokenizer of the name its first upstream knows the model by. */
  countLocally(body: ChatRequestBody, client: ClientWatch | undefined): Promise<number> {
    return countPromptTokens(body.messages, this.calls.upstreamModelOf(body.model), body.tools, client);
  }
}
