import type { FastifyInstance } from 'fastify';
import type { AdminAuthenticator } from '../auth/admin-auth.js';
import type { KeyService } from '../auth/key-service.js';
import type { GatewayConfig } from '../config/types.js';
import type { HealthService } from '../core/health-service.js';
import { mountDashboard } from '../dashboard/routes.js';
import type { UpstreamAttemptStats } from '../observability/upstream-attempts.js';
import type { OutboxStore, UsageStore } from '../store/contract.js';
import type { BatchRecord } from '../store/batch-contract.js';
import type { UsageRecorder } from '../usage/usage-recorder.js';
import type { Webhooks } from '../webhooks/webhooks.js';

/** The operator's dashboard (`/dashboard/`, behind an admin sign-in) over what the gateway already keeps. */
export function wireDashboard(
  app: FastifyInstance,
  config: GatewayConfig,
  admin: AdminAuthenticator,
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
    batches?: (() => Promise<readonly BatchRecord[]>) | undefined;
  },
): void {
  if (!config.dashboard.enabled) return;
  const { recorder } = sources;
  mountDashboard(app, {
    admin,
    adminTokens: config.adminTokens,
    sessionTtlMs: config.dashboard.sessionTtlMs,
    sources: {
      usage: recorder ? sources.usage : undefined,
      flushUsage: async () => recorder?.flush(),
      health: () => sources.health.report(),
      attempts: () => sources.attempts.summary(),
      outbox: sources.outbox,
      subscriptions: config.webhooks.subscriptions.map((s) => s.id),
      ...(sources.batches ? { batches: sources.batches } : {}),
    },
    keys: sources.keys,
    webhooks: sources.webhooks,
  });
}
