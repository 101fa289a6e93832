import { GatewayError } from '../../errors/gateway-error.js';
import type { AdmittedCall, ToolCallAdmission, ToolCallLimiter } from './tool-service.js';

/**
 * Tool-call limits kept in this process: calls a minute (a sliding window of one minute, per caller and per
 * server) and calls in flight. Used only when the app was built without a limit store (an embedding program, a
 * test); the gateway's own start always has one, and then store-tool-limiter.ts shares them across instances.
 */
export class LocalToolLimiter implements ToolCallLimiter {
  private readonly inFlight = new Map<string, number>();
  private readonly windows = new Map<string, number[]>();

  async admit(call: ToolCallAdmission): Promise<AdmittedCall> {
    const now = Date.now();
    const scopes = [
      { key: `caller:${call.caller}`, limits: call.callerLimits, scope: 'caller' as const, name: call.caller },
      { key: `server:${call.server}`, limits: call.serverLimits, scope: 'server' as const, name: call.server },
    ];
    for (const { key, limits, scope, name } of scopes) {
      if (!limits) continue;
      if (limits.concurrent !== undefined && (this.inFlight.get(key) ?? 0) >= limits.concurrent)
        throw limited(scope, name, 'concurrent', limits.concurrent, 1_000);
      if (limits.callsPerMinute !== undefined) {
        const window = (this.windows.get(key) ?? []).filter((t) => t > now - 60_000);
        this.windows.set(key, window);
        if (window.length >= limits.callsPerMinute)
          throw limited(scope, name, 'calls_per_minute', limits.callsPerMinute, (window[0] as number) + 60_000 - now);
      }
    }
    for (const { key, limits } of scopes) {
      if (!limits) continue;
      if (limits.callsPerMinute !== undefined) this.windows.get(key)?.push(now);
      this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1);
    }
    let released = false;
    return {
      rate: undefined,
      release: () => {
        if (released) return;
        released = true;
        for (const { key, limits } of scopes) {
          if (!limits) continue;
          const left = (this.inFlight.get(key) ?? 1) - 1;
          if (left <= 0) this.inFlight.delete(key);
          else this.inFlight.set(key, left);
        }
      },
    };
  }
}

function limited(
  scope: 'caller' | 'server',
  name: string,
  limit: string,
  value: number,
  retryMs: number,
): GatewayError {
  const seconds = Math.max(1, Math.ceil(retryMs / 1000));
  return new GatewayError(
    'rate_limited',
    // The same details as the store's limiter (store-tool-limiter.ts).
    { limit: `mcp.${scope}.${limit}`, scope, scope_id: name, max: value, retry_after_seconds: seconds },
    { headers: { 'retry-after': String(seconds) } },
  );
}
