import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import type { GatewayConfig } from '../config/types.js';
import type { BatchFiles } from '../core/batches/batch-files.js';
import { BatchRunner } from '../core/batches/batch-runner.js';
import { BatchService } from '../core/batches/batch-service.js';
import { GatewayRunBackend, LineSlots, type LineCounters } from '../core/batches/gateway-run-backend.js';
import { lineExecutorOf } from '../core/batches/line-executor.js';
import type { CallAs } from '../core/pipeline/call-as.js';
import { mountAnthropicBatches } from '../routes/batches-anthropic.js';
import { mountOpenAiBatches } from '../routes/batches-openai.js';
import { runByOf, type BatchInFlight, type BatchRecord, type BatchStore } from '../store/batch-contract.js';
import type { Webhooks } from '../webhooks/webhooks.js';
import type { BatchMetricsSource } from '../observability/batch-metrics.js';
import type { ConfigGenerations } from '../core/pipeline/config-generation.js';
import { nativeBatchBackend } from './native-batches-wiring.js';
import { sweepCreatesInBackground } from './batch-create-sweep-wiring.js';
import { sweepEndedLinesInBackground } from './batch-line-sweep-wiring.js';
import { readBatchJson } from '../routes/batch-requests-body.js';
import { hostname } from 'node:os';
import type { StorageQuota } from '../core/files/storage-quota.js';
import { BatchLinesQuota } from '../core/batches/batch-lines-quota.js';

/** What the metrics and the dashboard read of the batches (this process's runner, and the store's active batches). */
export interface BatchStats extends BatchMetricsSource {
  active(): Promise<BatchRecord[]>;
  /** The same batches with who runs each (the gateway, or an upstream's batch API) for the dashboard. */
  inFlight(): Promise<BatchInFlight[]>;
}

/** The events a batch's end is announced with (docs/webhooks.md). */
function eventOf(batch: BatchRecord): string | undefined {
  if (batch.status === 'completed') return 'batch.completed';
  if (batch.status === 'failed' || batch.status === 'expired') return 'batch.failed';
  if (batch.status === 'cancelled') return 'batch.cancelled';
  return undefined;
}

function eventData(batch: BatchRecord): Record<string, unknown> {
  return {
    batch_id: batch.id,
    api: batch.api,
    caller: batch.owner,
    endpoint: batch.endpoint,
    status: batch.status,
    request_counts: batch.counts,
    output_file_id: batch.outputFileId,
    error_file_id: batch.errorFileId,
    errors: batch.errors,
    model: batch.model,
    // The succeeded lines' tokens, only when every one of them reported usage (as the batch's own view).
    usage:
      batch.usage.lines === batch.counts.succeeded
        ? {
            input_tokens: batch.usage.input,
            cached_input_tokens: batch.usage.cached,
            output_tokens: batch.usage.output,
            reasoning_tokens: batch.usage.reasoning,
            total_tokens: batch.usage.total,
          }
        : null,
  };
}

/**
 * The batch APIs (OpenAI's `/v1/batches`, Anthropic's `/v1/messages/batches`) over one engine, and this process's
 * runner: started once the app is ready, stopped before the server closes (its lines in flight are calls into the
 * app), its leases given back so another process goes on at once.
 */
export function wireBatches(
  app: FastifyInstance,
  config: GatewayConfig,
  deps: {
    auth: Authenticator;
    /** How a line is run: as a call of its batch's owner through the whole pipeline. */
    callAs: CallAs;
    store: BatchStore | undefined;
    files: BatchFiles | undefined;
    /** The storage quotas a batch's lines count against (none: not counted). */
    quota?: StorageQuota;
    webhooks: Webhooks;
    generations: ConfigGenerations;
  },
): BatchStats | undefined {
  const { store, files, auth, webhooks, generations } = deps;
  if (!store) return undefined;
  const { batches: settings } = config;
  const limits = {
    maxLines: settings.maxLines,
    maxLineBytes: settings.maxLineBytes,
    maxOutputTtlSeconds: Math.floor(config.files.maxTtlMs / 1000),
    anthropicResultsRetentionMs: settings.anthropicResultsRetentionMs,
    createGraceMs: settings.createGraceMs,
  };
  const linesQuota = deps.quota ? new BatchLinesQuota(deps.quota) : undefined;
  const counters: LineCounters = { succeeded: 0, errored: 0, deferred: 0 };
  const slots = new LineSlots(settings.concurrency);
  const runner = settings.run
    ? new BatchRunner({
        store,
        files,
        limits,
        backends: [
          nativeBatchBackend(app, settings, { generations, auth, store, counters }),
          new GatewayRunBackend({
            store,
            execute: lineExecutorOf(deps.callAs),
            slots,
            rateShare: settings.rateShare,
            pollMs: settings.pollMs,
            counters,
            log: app.log,
          }),
        ],
        leaseMs: settings.leaseMs,
        pollMs: settings.pollMs,
        maxBatches: settings.maxBatches,
        onEnded: (batch) => {
          const kind = eventOf(batch);
          if (kind && webhooks.wants(kind)) void webhooks.emit(kind, eventData(batch));
        },
        readLine: readBatchJson,
        ...(linesQuota ? { linesQuota } : {}),
        // Two live processes never share it with the same pid (runner-identity.ts): cluster workers and several
        // processes on one data folder share this identity safely.
        identity: settings.instanceId ?? `${hostname()}:${config.dataDir}`,
        log: app.log,
      })
    : undefined;
  const service = new BatchService({
    store,
    files,
    limits,
    onCreated: () => runner?.wake(),
    now: Date.now,
    linesQuota,
  });
  mountOpenAiBatches(app, auth, service);
  mountAnthropicBatches(app, auth, service, store, {
    maxCreateBytes: settings.maxCreateBytes,
    maxLineBytes: settings.maxLineBytes,
  });
  sweepCreatesInBackground(app, store, settings.createGraceMs);
  sweepEndedLinesInBackground(app, store);
  if (runner) {
    app.addHook('onReady', async () => runner.start());
    app.addHook('preClose', async () => runner.stop());
  }
  return {
    lines: () => counters,
    linesInFlight: () => slots.inFlight,
    active: () => store.active(100),
    inFlight: async () => {
      const active = await store.active(100);
      const states = await Promise.all(active.map((batch) => store.nativeState(batch.id)));
      return active.map((batch, i) => ({ batch, runBy: runByOf(states[i]) }));
    },
  };
}
