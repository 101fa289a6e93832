import { GatewayError } from '../../errors/gateway-error.js';
import { ClientGoneError } from '../../errors/client-gone.js';

/**
 * One upstream call's lifetime: a single AbortController aborted either by the caller leaving or by the total
 * deadline, with the reason telling which. The upstream request is bound to its signal, so a caller that hangs
 * up cancels the upstream call (and stops the provider's meter) instead of letting it run to the end.
 */
export class CallScope {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;

  constructor(totalTimeoutMs: number, upstream: string) {
    this.timer = setTimeout(() => {
      this.controller.abort(new GatewayError('upstream_total_timeout', { upstream, timeout_ms: totalTimeoutMs }));
    }, totalTimeoutMs);
    this.timer.unref();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  clientGone(): void {
    this.controller.abort(new ClientGoneError());
  }

  dispose(): void {
    clearTimeout(this.timer);
  }
}

/**
 * The caller's side of a call: whether it hung up, and the scope of the try in progress, which is cancelled when
 * it does. One per request, shared by every try (a plain object rather than an AbortSignal: no EventTarget work on
 * the hot path).
 */
export interface ClientWatch {
  readonly gone: boolean;
  /** Makes `scope` the try in progress: cancelled at once if the caller already left, or when it leaves. */
  follow(scope: CallScope): void;
}
