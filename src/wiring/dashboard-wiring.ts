import type { FastifyInstance } from 'fastify';
import type { AdminAuthenticator } from '../auth/admin-auth.js';
import type { KeyService } from '../auth/key-service.js';
import type { GatewayConfig } from '../config/types.js';
import type { ConfigGenerations } from '../core/pipeline/config-generation.js';
import type { HealthService } from '../core/health/health-service.js';
import { mountDashboard } from '../dashboard/routes.js';
import type { UpstreamAttemptStats } from '../observability/upstream-attempts.js';
import type { OutboxStore, UsageStore } from '../store/store-contract.js';
import type { BatchInFlight } from '../store/batch-contract.js';
import type { VectorUsageView } from '../core/retrieval/vector-usage.js';
import type { UsageRecorder } from '../usage/usage-recorder.js';
import type { ToolCallStore } from '../store/tool-call-contract.js';
import type { ToolCallRecorder } from '../usage/tool-call-recorder.js';
import type { Webhooks } from '../webhooks/webhooks.js';

/** The operator's dashboard (`/dashboard/`, behind an admin sign-in) over what the gateway already keeps; `dashboard.enabled` is read live. */
export function wireDashboard(
  app: FastifyInstance,
  config: GatewayConfig,
  admin: AdminAuthenticator,
  generations: ConfigGenerations,
  sources: {
    health: HealthService;
    attempts: UpstreamAttemptStats;
    recorder: UsageRecorder | undefined;
    usage: UsageStore | undefined;
    outbox: OutboxStore | undefined;
    /** Scoped keys for the Keys page (none: no key store, and the page says so). */
    keys?: KeyService | undefined;
    /** Key changes made on the page are announced like the admin API's (`key.created`, `key.rotated`, `key.revoked`). */
    webhooks?: Webhooks | undefined;
    /** Batches not yet ended (none: no batch store). */
    batches?: (() => Promise<readonly BatchInFlight[]>) | undefined;
    /** The vector stores' usage per caller (none: the Vector Stores API is off). */
    vectorStores?: (() => Promise<VectorUsageView>) | undefined;
    /** The MCP tool-call records (none: not kept). */
    toolCalls?: { store: ToolCallStore; recorder: ToolCallRecorder } | undefined;
  },
): void {
  const current = () => generations.current.config;
  const { recorder } = sources;
  // Mounted whatever the switch says, in its own scope whose first hook reads the switch on every request: a
  // config reload turns the pages on or off (off: the same 404 as any unknown path).
  void app.register(async (scope) => {
    scope.addHook('onRequest', async (_request, reply) => {
      if (current().dashboard.enabled) return;
      reply.callNotFound();
      return reply; // answered: an async hook that sent the reply returns it (Fastify's rule)
    });
    mountDashboard(scope, {
      admin,
      adminTokens: config.adminTokens,
      sessionTtlMs: config.dashboard.sessionTtlMs,
      sources: {
        usage: recorder ? sources.usage : undefined,
        flushUsage: async () => recorder?.flush(),
        health: () => sources.health.report(),
        attempts: () => sources.attempts.summary(),
        outbox: sources.outbox,
        subscriptions: () => current().webhooks.subscriptions.map((s) => s.id),
        priced: (model) => generations.current.prices.describe(model).pricing !== undefined,
        ...(sources.batches ? { batches: sources.batches } : {}),
        ...(sources.vectorStores ? { vectorStores: sources.vectorStores } : {}),
        ...(sources.toolCalls ? { toolCalls: toolCallSource(sources.toolCalls) } : {}),
      },
      keys: sources.keys,
      webhooks: sources.webhooks,
    });
  });
}

function toolCallSource(toolCalls: { store: ToolCallStore; recorder: ToolCallRecorder }) {
  return { store: toolCalls.store, flush: () => toolCalls.recorder.flush() };
}
