/**
 * The tool calls this process is running for `/mcp` callers, by caller and JSON-RPC request id, so that a client's
 * `notifications/cancelled` — which arrives in an HTTP request of its own, to a fresh SDK server (the endpoint is
 * stateless) — reaches the call it names and aborts it (the upstream is told to cancel). A cancellation landing on
 * another instance than the call's finds nothing here: the call is also aborted when its own HTTP request closes.
 */
export class InFlightCalls {
  private readonly calls = new Map<string, AbortController>();

  /** Registers a call; returns its abort signal and the function that forgets it when it ends. */
  start(caller: string, requestId: string | number, signal: AbortSignal): { signal: AbortSignal; end(): void } {
    const key = keyOf(caller, requestId);
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal.reason);
    if (signal.aborted) controller.abort(signal.reason);
    else signal.addEventListener('abort', onAbort, { once: true });
    // A second call with the same id from the same caller replaces the first's entry (the first keeps running).
    this.calls.set(key, controller);
    return {
      signal: controller.signal,
      end: () => {
        signal.removeEventListener('abort', onAbort);
        if (this.calls.get(key) === controller) this.calls.delete(key);
      },
    };
  }

  /** Aborts the caller's call `requestId`, if this process runs it. */
  cancel(caller: string, requestId: string | number, reason: string | undefined): boolean {
    const controller = this.calls.get(keyOf(caller, requestId));
    if (!controller) return false;
    controller.abort(new Error(`cancelled by the client${reason ? `: ${reason.slice(0, 200)}` : ''}`));
    return true;
  }

  get size(): number {
    return this.calls.size;
  }
}

function keyOf(caller: string, requestId: string | number): string {
  return `${caller}\u0000${typeof requestId}:${String(requestId)}`;
}
