import type { CallContext, ChatRequestBody, ChatCompletionResult, StreamChunk } from '../providers/contract.js';
import { CallScope } from './call-scope.js';
import type { ModelRouter } from './model-router.js';

export interface ChatCall {
  /** The caller's X-Upstream-Key, replacing the configured key for this call only. */
  upstreamKey: string | undefined;
  requestId: string;
  /** The request body as received, forwarded byte for byte when routing changes nothing in it. */
  rawBody: string | undefined;
}

export interface StartedStream {
  upstream: string;
  scope: CallScope;
  chunks: AsyncIterator<StreamChunk>;
}

/** The chat use case, free of HTTP: resolve the model, call its provider within a deadline. */
export class ChatService {
  constructor(private readonly router: ModelRouter) {}

  /** Resolves the target first so that routing errors are thrown before any upstream work starts. */
  async complete(
    body: ChatRequestBody,
    call: ChatCall,
    onScope: (scope: CallScope, upstream: string) => void,
  ): Promise<ChatCompletionResult> {
    const target = this.router.resolve(body.model);
    const scope = new CallScope(target.totalTimeoutMs, target.provider.name);
    onScope(scope, target.provider.name);
    try {
      const unchanged = target.upstreamModel === body.model && body.stream !== true;
      const upstreamBody = unchanged ? body : { ...body, model: target.upstreamModel, stream: false };
      return await target.provider.chat(upstreamBody, this.context(call, scope, unchanged));
    } finally {
      scope.dispose();
    }
  }

  /** Starts a stream; the caller owns the scope and must dispose it when the stream ends, however it ends. */
  stream(body: ChatRequestBody, call: ChatCall): StartedStream {
    const target = this.router.resolve(body.model);
    const scope = new CallScope(target.totalTimeoutMs, target.provider.name);
    const unchanged = target.upstreamModel === body.model && body.stream === true;
    const upstreamBody = unchanged ? body : { ...body, model: target.upstreamModel, stream: true };
    const chunks = target.provider.streamChat(upstreamBody, this.context(call, scope, unchanged));
    return { upstream: target.provider.name, scope, chunks: chunks[Symbol.asyncIterator]() };
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
