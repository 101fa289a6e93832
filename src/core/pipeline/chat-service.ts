import { GatewayError } from '../../errors/gateway-error.js';
import type {
  ChatCompletionResult,
  ChatExtra,
  ChatRequestBody,
  NativeApi,
  NativeApiName,
  NativeBody,
} from '../../providers/provider-contract.js';
import type { CallScope, ClientWatch } from './call-scope.js';
import type { FileForwarding, NamedFiles } from '../files/file-forwarding.js';
import type { FileRef } from '../files/file-refs.js';
import type { CallPipeline } from './call-pipeline.js';
import { fitContextWindow } from '../tokens/context-window.js';
import { openStream, type CallInput, type ModelCall, type StartedStream } from './model-call.js';
import type { ChatTarget } from '../models/model-router.js';
import type { PricedUsage } from '../models/pricing.js';
import { estimateTokens, type TokenEstimate } from '../limits/rate-limit-service.js';
import type { AttemptTrace } from './trace-contract.js';
import type { Answered } from './target-runner.js';

export type { StartedStream } from './model-call.js';

export interface CompletedChat {
  result: ChatCompletionResult;
  /** RateLimit-* headers for the answer. */
  headers: Record<string, string>;
  /** The upstream that answered. */
  upstream: string;
  /** What the call used, priced (undefined when the upstream reported no usage). */
  usage: PricedUsage | undefined;
}

/**
 * Chat calls, free of HTTP: a chat request answered whole or streamed, and a public API's request forwarded as it
 * is to the upstreams that speak it natively. Each is one ModelCall of the CallPipeline (plan → admit → run or
 * start → settle: src/core/pipeline/model-call.ts); this adds what is chat's own: the model's type, its context window
 * (checked or truncated), the token estimate of a chat body, and the upstream body of each target.
 */
export class ChatService {
  /** `files`: the gateway's files a request names, made available to each upstream (core/files/file-forwarding.ts). */
  constructor(
    private readonly calls: CallPipeline,
    private readonly files?: FileForwarding,
  ) {}

  async complete(original: ChatRequestBody, originalInput: CallInput): Promise<CompletedChat> {
    const refs = this.files?.named(original, originalInput.rawBody);
    const resolved = refs && (await this.resolveFiles(original, refs, originalInput));
    const { body, call } = await this.planChat(original, originalInput);
    const named = resolved?.on(body);
    const answered = await call.run((target, scope, trace) => {
      const unchanged = named === undefined && target.upstreamModel === body.model && body.stream !== true;
      const upstreamBody = unchanged ? body : { ...body, model: target.upstreamModel, stream: false };
      const context = call.contextFor(target, scope, trace, unchanged);
      // No file named (nearly every call): no extra await on the hot path.
      if (named === undefined) return target.provider.chat(upstreamBody, context);
      return named
        .bodyFor(upstreamBody, target.provider, context, true)
        .then((sent) => target.provider.chat(sent, context));
    });
    return completed(call, answered);
  }

  /** Starts a stream: returns once a target delivered its first chunk; the route settles its call when it ends. */
  async stream(original: ChatRequestBody, originalInput: CallInput): Promise<StartedStream> {
    const refs = this.files?.named(original, originalInput.rawBody);
    const resolved = refs && (await this.resolveFiles(original, refs, originalInput));
    const { body, call } = await this.planChat(original, originalInput);
    const named = resolved?.on(body);
    return call.start((target, scope, trace) => {
      const unchanged = named === undefined && target.upstreamModel === body.model && body.stream === true;
      const upstreamBody = unchanged ? body : { ...body, model: target.upstreamModel, stream: true };
      const context = call.contextFor(target, scope, trace, unchanged);
      if (named === undefined) return openStream(target, target.provider.streamChat(upstreamBody, context));
      return named
        .bodyFor(upstreamBody, target.provider, context, true)
        .then((sent) => openStream(target, target.provider.streamChat(sent, context)));
    });
  }

  /** The named files checked as the caller's (404 before any limit is taken or anything goes upstream). */
  private resolveFiles(body: object, refs: FileRef[], input: CallInput): Promise<NamedFiles> {
    return (this.files as FileForwarding).resolve(body, refs, input.caller);
  }

  /**
   * Forwards a request of a public API as it is to the upstreams of its model that speak that API natively (the
   * Responses API to OpenAI and Azure, the Messages API to Anthropic). The same plan, admission (`estimate`: the
   * surface's, from the request's size and its maximum output), retries, fallbacks and circuits as a chat call.
   */
  async forwardNative(
    api: NativeApiName,
    body: NativeBody,
    input: CallInput,
    estimate: TokenEstimate,
  ): Promise<CompletedChat | StartedStream> {
    const refs = this.files?.named(body, input.rawBody);
    const named = refs && (await this.resolveFiles(body, refs, input));
    const call = this.calls.planNative(api, body.model, input);
    if (call.admits) await call.admit(estimate);
    const forwarded = (target: ChatTarget) => target.provider.native?.[api] as NativeApi;
    // The body for one target, and the context its call gets (the caller's bytes only when nothing changed).
    const prepared = async (target: ChatTarget, scope: CallScope, trace: AttemptTrace | undefined) => {
      const renamed = target.upstreamModel === body.model ? body : { ...body, model: target.upstreamModel };
      const context = call.contextFor(target, scope, trace, renamed === body && named === undefined);
      const sent = named ? await named.bodyFor(renamed, target.provider, context, false) : renamed;
      return { sent, context };
    };
    if (body.stream === true) {
      return call.start(async (target, scope, trace) => {
        const { sent, context } = await prepared(target, scope, trace);
        return openStream(target, forwarded(target).stream(sent, context));
      });
    }
    const answered = await call.run(async (target, scope, trace) => {
      const { sent, context } = await prepared(target, scope, trace);
      return forwarded(target).complete(sent, context);
    });
    return completed(call, answered);
  }

  /** Whether some upstream of the model serves `api` natively (see forwardNative). */
  forwardsNatively(api: NativeApiName, model: string): boolean {
    return this.calls.forwardsNatively(api, model);
  }

  /** Whether every upstream of the model speaks `api` natively and its config wants that (CallPipeline.forwardsWholly). */
  forwardsWholly(api: NativeApiName, model: string): boolean {
    return this.calls.forwardsWholly(api, model);
  }

  /** Whether every upstream the model may be sent to carries the chat field `field` (providers/provider-contract.ts ChatExtra). */
  carries(model: string, field: ChatExtra): boolean {
    return this.calls.router
      .plan(model, () => 0.5)
      .candidates.every((target) => target.provider.chatExtras?.has(field) === true);
  }

  /** How a translated request to `model` treats fields without an equivalent (its config's `translation`). */
  translationOf(model: unknown): 'tolerant' | 'strict' {
    return typeof model === 'string' ? (this.calls.router.declared(model)?.translation ?? 'tolerant') : 'tolerant';
  }

  /** The model id an alias stands for (or the id itself). */
  canonicalModel(model: string): string {
    return this.calls.canonicalModel(model);
  }

  /** A response cache hit's admission (CallPipeline.admitCachedAnswer), asked here by routes/response-cache.ts. */
  admitCachedAnswer(model: string, input: CallInput): Promise<Record<string, string>> {
    return this.calls.admitCachedAnswer(model, input);
  }

  /**
   * The context-window check of a natively forwarded request, on its chat form: a 400 `context_length_exceeded` when
   * it cannot fit the declared window (the native body is never truncated: it is forwarded as it is).
   */
  async checkContextWindow(asChat: ChatRequestBody, client?: ClientWatch): Promise<void> {
    const facts = this.calls.prices.of(asChat.model);
    // A catalog window never refuses a call (see fitContext).
    if (facts.contextWindowSource === 'config') await fitContextWindow(asChat, facts, 'error', client);
  }

  /** A chat call planned and admitted, on its body fitted to the model's window (no longer the raw one if truncated). */
  private async planChat(
    original: ChatRequestBody,
    originalInput: CallInput,
  ): Promise<{ body: ChatRequestBody; call: ModelCall }> {
    this.calls.requireType(original.model, 'chat');
    const fitting = this.fitContext(original, originalInput);
    const body = fitting === original ? original : await fitting;
    const call = this.calls.plan(
      body.model,
      body === original ? originalInput : { ...originalInput, rawBody: undefined },
    );
    if (call.admits) await call.admit(estimateTokens(body.messages, body.tools, maxTokensOf(body), choicesOf(body)));
    return { body, call };
  }

  /**
   * The context-window check. A window from the config is enforced (400 context_length_exceeded, or truncation
   * when asked). A window from the price catalog is the provider's published figure, and the gateway's count is
   * exact only for OpenAI's tokenizers: it serves only a caller who asked for `X-Context-Overflow: truncate`, and
   * never refuses a call (a prompt that cannot be fitted goes as it came, and the provider judges it). So a call
   * without that header does no window work at all for a catalog window: the body itself comes back, not a promise.
   */
  private fitContext(body: ChatRequestBody, input: CallInput): ChatRequestBody | Promise<ChatRequestBody> {
    const facts = this.calls.prices.of(body.model);
    if (facts.contextWindowSource === undefined) return body;
    if (facts.contextWindowSource === 'config')
      return fitContextWindow(body, facts, input.contextOverflow, input.client);
    if (input.contextOverflow !== 'truncate') return body;
    return fitContextWindow(body, facts, 'truncate', input.client).catch((error: unknown) => {
      if (error instanceof GatewayError && error.code === 'context_length_exceeded') return body;
      throw error;
    });
  }
}

/** An answer read whole, its call settled (the lease goes back without holding up the answer). */
function completed(call: ModelCall, answered: Answered<ChatCompletionResult>): CompletedChat {
  const usage = call.settle(answered.value.usage);
  return { result: answered.value, headers: call.headers, upstream: answered.target.upstream, usage };
}

/** The completion a chat body asks for: `max_tokens`, else the newer `max_completion_tokens` (both schema-bounded). */
function maxTokensOf(body: ChatRequestBody): number | undefined {
  if (typeof body.max_tokens === 'number') return body.max_tokens;
  return typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : undefined;
}

/** The choices a chat body asks for (`n`, schema-bounded); undefined: one. */
function choicesOf(body: ChatRequestBody): number | undefined {
  return typeof body.n === 'number' ? body.n : undefined;
}
