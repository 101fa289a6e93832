import type { FastifyInstance } from 'fastify';
import type { ConfigGenerations } from '../core/pipeline/config-generation.js';
import { LocalToolLimiter } from '../core/mcp/local-tool-limiter.js';
import { StoreToolLimiter } from '../core/mcp/store-tool-limiter.js';
import type { ToolCallRecord } from '../core/mcp/tool-call-record.js';
import type { ToolCallContext, ToolCallLimiter, ToolCallObserver } from '../core/mcp/tool-service.js';
import type { GatewayTracing } from '../observability/tracing.js';
import type { ToolCallRecorder } from '../usage/tool-call-recorder.js';
import { toolCallEvents } from '../webhooks/tool-call-events.js';
import type { Webhooks } from '../webhooks/webhooks.js';
import type { WiredLimits } from './limits-wiring.js';

/** What looks at each MCP tool call once it ended; more may be added after the service is built (metrics). */
export interface WiredToolCalls {
  observer: ToolCallObserver;
  add(listener: (record: ToolCallRecord, context: ToolCallContext) => void): void;
}

/**
 * Everything a tool call leaves behind (docs/mcp.md, "Records"): its record in the usage store (batched off the
 * call's path), its webhook event, its span; `/metrics` adds its counters (metrics-wiring.ts). One listener that
 * throws is logged and does not keep the others from seeing the call.
 */
export function wireToolCallRecords(
  app: FastifyInstance,
  sources: { recorder: ToolCallRecorder | undefined; webhooks: Webhooks; tracing: GatewayTracing | undefined },
): WiredToolCalls {
  const listeners: Array<(record: ToolCallRecord, context: ToolCallContext) => void> = [];
  const { recorder, tracing } = sources;
  if (recorder) listeners.push((record) => recorder.add(record));
  const events = toolCallEvents(sources.webhooks);
  listeners.push((record) => events(record));
  if (tracing) listeners.push((record, context) => tracing.toolCall(record, context.traceparent));
  return {
    observer: {
      ended(record, context) {
        for (const listener of listeners) {
          try {
            listener(record, context);
          } catch (error) {
            app.log.error({ err: error, call_id: record.callId }, 'a tool-call observer failed');
          }
        }
      },
    },
    add: (listener) => void listeners.push(listener),
  };
}

/**
 * The tool-call limits in the gateway's limit store (Redis when REDIS_URL is set: shared by every instance), over
 * the same leases as the model calls' limits; `limits.on_store_failure` read live. Without a limit store (an app
 * built without one: an embedding program, a test) the limits are kept in this process.
 */
export function wireToolCallLimiter(
  app: FastifyInstance,
  generations: ConfigGenerations,
  limits: WiredLimits,
): ToolCallLimiter {
  if (!limits.admissions) return new LocalToolLimiter();
  return new StoreToolLimiter({
    store: limits.admissions,
    onStoreFailure: () => generations.current.config.limits.onStoreFailure,
    onStoreHealth: (healthy, error) => limits.onStoreHealth(healthy, error),
    onReleaseError: (error) =>
      app.log.warn({ err: error }, 'an MCP tool call slot could not be given back; it lapses with its lease'),
  });
}
