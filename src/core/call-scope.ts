import { GatewayError } from '../errors/gateway-error.js';
import { ClientGoneError } from '../errors/client-gone.js';

/**
 * One upstream call's lifetime: a single AbortController aborted either by the caller leaving or by the total
 * deadline, with the reason telling which. The upstream request is bound to its signal, so a caller that hangs
 * up cancels the upstream call (and stops the provider's meter) instead of letting it run to the end.
 */
export class CallScope {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;

  private readonly client: AbortSignal | undefined;
  private readonly onClientGone = () => this.clientGone();

  /** `client` aborts when the caller hangs up (one signal per request, shared by every try of the call). */
  constructor(totalTimeoutMs: number, upstream: string, client?: AbortSignal) {
    this.timer = setTimeout(() => {
      this.controller.abort(new GatewayError('upstream_total_timeout', { upstream, timeout_ms: totalTimeoutMs }));
    }, totalTimeoutMs);
    this.timer.unref();
    this.client = client;
    if (client?.aborted) this.clientGone();
    else client?.addEventListener('abort', this.onClientGone, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  clientGone(): void {
    this.controller.abort(new ClientGoneError());
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.client?.removeEventListener('abort', this.onClientGone);
  }
}
