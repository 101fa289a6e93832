import type { CallContext, ChatRequestBody, ChatCompletionResult, StreamChunk } from '../providers/contract.js';
import { CallScope } from './call-scope.js';
import type { ChatTarget, ModelRouter } from './model-router.js';
import { createHash } from 'node:crypto';
import { isGatewayError } from '../errors/gateway-error.js';
import { estimateTokens, type Admission, type RateLimitService } from './rate-limit-service.js';
import type { UpstreamPauses } from './upstream-pauses.js';

export interface ChatCall {
  /** Who is calling, for per-caller limits (the admin token is one caller until scoped keys exist). */
  caller: string;
  /** The caller's X-Upstream-Key, replacing the configured key for this call only. */
  upstreamKey: string | undefined;
  requestId: string;
  /** The request body as received, forwarded byte for byte when routing changes nothing in it. */
  rawBody: string | undefined;
}

export interface CompletedChat {
  result: ChatCompletionResult;
  /** RateLimit-* headers for the answer. */
  headers: Record<string, string>;
}

export interface StartedStream {
  upstream: string;
  scope: CallScope;
  chunks: AsyncIterator<StreamChunk>;
  headers: Record<string, string>;
  /**
   * Must be called once when the stream ends, however it ends, with the tokens used if known, and with the
   * error when the stream failed before its first chunk (an upstream 429 there pauses the upstream).
   */
  finish(totalTokens: number | undefined, error?: unknown): Promise<void>;
}

/** Lease margin beyond the call's total budget before a concurrency slot frees itself. */
const LEASE_MARGIN_MS = 5_000;

/** The chat use case, free of HTTP: resolve the model, admit the call against the limits, call the provider. */
export class ChatService {
  constructor(
    private readonly router: ModelRouter,
    private readonly limits: RateLimitService,
    private readonly pauses: UpstreamPauses,
  ) {}

  /** Routing and admission errors are thrown before any upstream work starts. */
  async complete(body: ChatRequestBody, call: ChatCall, onScope: (scope: CallScope, upstream: string) => void): Promise<CompletedChat> {
    const target = this.router.resolve(body.model);
    const pauseScope = this.pauseScope(target, call);
    const pauseCheck = this.pauses.check(pauseScope, target.provider.name);
    if (pauseCheck) await pauseCheck;
    const admission = await this.admit(body, call, target);
    const scope = new CallScope(target.totalTimeoutMs, target.provider.name);
    onScope(scope, target.provider.name);
    let result: ChatCompletionResult | undefined;
    try {
      const unchanged = target.upstreamModel === body.model && body.stream !== true;
      const upstreamBody = unchanged ? body : { ...body, model: target.upstreamModel, stream: false };
      result = await target.provider.chat(upstreamBody, this.context(call, scope, unchanged));
      return { result, headers: admission?.headers ?? {} };
    } catch (error) {
      await this.notePause(pauseScope, error);
      throw error;
    } finally {
      scope.dispose();
      if (admission) void admission.finish(result?.usage?.total_tokens);
    }
  }

  /** Starts a stream; the caller owns the scope and must call `finish` when the stream ends, however it ends. */
  async stream(body: ChatRequestBody, call: ChatCall): Promise<StartedStream> {
    const target = this.router.resolve(body.model);
    const pauseScope = this.pauseScope(target, call);
    const pauseCheck = this.pauses.check(pauseScope, target.provider.name);
    if (pauseCheck) await pauseCheck;
    const admission = await this.admit(body, call, target);
    const scope = new CallScope(target.totalTimeoutMs, target.provider.name);
    const unchanged = target.upstreamModel === body.model && body.stream === true;
    const upstreamBody = unchanged ? body : { ...body, model: target.upstreamModel, stream: true };
    const chunks = target.provider.streamChat(upstreamBody, this.context(call, scope, unchanged));
    let finished = false;
    return {
      upstream: target.provider.name,
      scope,
      chunks: chunks[Symbol.asyncIterator](),
      headers: admission?.headers ?? {},
      finish: async (totalTokens, error) => {
        if (finished) return;
        finished = true;
        scope.dispose();
        if (error !== undefined) await this.notePause(pauseScope, error);
        await admission?.finish(totalTokens);
      },
    };
  }

  /** No limits configured: no admission at all, so the default path pays nothing for the feature. */
  private async admit(body: ChatRequestBody, call: ChatCall, target: ChatTarget): Promise<Admission | undefined> {
    if (!this.limits.enabled) return undefined;
    return this.limits.admit({
      caller: call.caller,
      model: body.model,
      upstream: target.provider.name,
      estimatedTokens: estimateTokens(body.messages, body.max_tokens),
      requestId: call.requestId,
      leaseMs: target.totalTimeoutMs + LEASE_MARGIN_MS,
    });
  }

  /**
   * What an upstream's 429 pauses: the upstream with its configured key, for everyone; a caller's own key
   * (X-Upstream-Key) has its own quota at the provider, so its 429 pauses only calls made with that key.
   */
  private pauseScope(target: ChatTarget, call: ChatCall): string {
    if (!this.pauses.enabled) return '';
    const name = target.provider.name;
    if (call.upstreamKey === undefined) return name;
    return `${name}#${createHash('sha256').update(call.upstreamKey).digest('base64url').slice(0, 22)}`;
  }

  private async notePause(pauseScope: string, error: unknown): Promise<void> {
    if (isGatewayError(error) && error.code === 'upstream_rate_limited' && error.details.paused !== true) {
      await this.pauses.record(pauseScope, error.headers?.['retry-after']);
    }
  }

  private context(call: ChatCall, scope: CallScope, bodyUnchanged: boolean): CallContext {
    return {
      apiKeyOverride: call.upstreamKey,
      signal: scope.signal,
      requestId: call.requestId,
      bodyJson: bodyUnchanged ? call.rawBody : undefined,
    };
  }
}
