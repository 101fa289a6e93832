import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import type { GatewayConfig } from '../config/types.js';
import type { ConfigGenerations } from '../core/pipeline/config-generation.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { registerBatchMetrics, type BatchMetricsSource } from '../observability/batch-metrics.js';
import { registerFileMetrics, type FileMetricsSource } from '../observability/file-metrics.js';
import { registerVectorStoreMetrics, type VectorStoreMetricsSource } from '../observability/vector-store-metrics.js';
import type { UpstreamAttemptStats } from '../observability/upstream-attempts.js';
import type { OutboxStore } from '../store/store-contract.js';
import type { WiredUpstreams } from './upstreams-wiring.js';
import type { UsageRecorder } from '../usage/usage-recorder.js';
import { registerToolCallMetrics } from '../observability/mcp-metrics.js';
import type { WiredToolCalls } from './tool-calls-wiring.js';

/** What the metrics read and who may scrape them. */
export interface MetricsWiring {
  auth: Authenticator;
  upstreams: WiredUpstreams;
  attempts: UpstreamAttemptStats;
  outbox: OutboxStore | undefined;
  recorder: UsageRecorder | undefined;
  generations: ConfigGenerations;
  batches?: BatchMetricsSource | undefined;
  files?: FileMetricsSource | undefined;
  vectorStores?: VectorStoreMetricsSource | undefined;
  /** The MCP tool calls, counted as they end. */
  toolCalls?: WiredToolCalls | undefined;
}

/** `GET /metrics` (Prometheus text, behind the admin token) and the observer that counts every API request. */
export function wireMetrics(
  app: FastifyInstance,
  config: GatewayConfig,
  { auth, upstreams, attempts, outbox, recorder, generations, batches, files, vectorStores, toolCalls }: MetricsWiring,
): void {
  if (!config.metricsEnabled) return;
  const subscriptions = () => generations.current.config.webhooks.subscriptions;
  const metrics = new GatewayMetrics({
    circuits: () => upstreams.breakers.snapshot(),
    pauses: () => upstreams.pauses.active(),
    loads: () => upstreams.capacity.loads(),
    attempts,
    ...(recorder ? { deadLetteredUsage: () => recorder.deadLettered } : {}),
    ...(outbox
      ? {
          webhookBacklog: async () =>
            Object.fromEntries(
              await Promise.all(subscriptions().map(async (s) => [s.id, await outbox.backlog(s.id)] as const)),
            ),
        }
      : {}),
    configReloads: () => ({ applied: generations.applied, failed: generations.failed, version: generations.version }),
  });
  if (batches) registerBatchMetrics(metrics.registry, batches);
  if (files) registerFileMetrics(metrics.registry, files);
  if (vectorStores) registerVectorStoreMetrics(metrics.registry, vectorStores);
  if (toolCalls) {
    const toolCallMetrics = registerToolCallMetrics(metrics.registry);
    toolCalls.add((record) => toolCallMetrics.observe(record));
  }
  app.requestObservers.push((record) => metrics.observe(record));
  // Behind the admin token (Prometheus: `authorization: { credentials: <token> }` in the scrape config).
  app.get('/metrics', async (request, reply) => {
    request.routeName = 'metrics';
    await auth.authenticate(request.headers.authorization, 'metrics');
    const scraped = await metrics.scrape();
    return reply.type(scraped.contentType).send(scraped.text);
  });
}
