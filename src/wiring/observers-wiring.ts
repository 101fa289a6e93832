import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config/types.js';
import type { RequestTrace } from '../core/pipeline/trace-contract.js';
import type { UsageStore } from '../store/store-contract.js';
import type { ToolCallStore } from '../store/tool-call-contract.js';
import type { GatewayTracing } from '../observability/tracing.js';
import { ToolCallRecorder } from '../usage/tool-call-recorder.js';
import { headOf } from '../request/request-record.js';
import { usageObserver } from '../usage/record-request.js';
import { UsageRecorder } from '../usage/usage-recorder.js';
import { UsageRetention } from '../usage/usage-retention.js';
import { usageAnomalyLog } from '../usage/usage-anomalies.js';
import { join } from 'node:path';
import { ownSpoolOwner } from '../usage/spool-owner.js';
import { replayDeadSpools } from '../usage/spool-replay.js';
import { SPOOL_FOLDER, UsageSpool } from '../usage/usage-spool.js';
import { sweepInBackground } from './background-sweep-wiring.js';

/** How often the spools of stopped processes are looked for (and at start). */
const SPOOL_REPLAY_EVERY_MS = 60_000;

/**
 * What looks at every API request (chat, models) once it ended, a caller who hung up included (run by
 * endRequest, with the access line): usage records, the log line of a corrected usage figure and the trace's
 * request span here; metrics in metrics.ts.
 * Each closes with the app.
 */
export async function wireObservers(
  app: FastifyInstance,
  config: GatewayConfig,
  usage: UsageStore | undefined,
  toolCalls?: ToolCallStore | undefined,
) {
  app.requestObservers.push(usageAnomalyLog(app.log));
  const recording = usage && config.usage.enabled ? usage : undefined;
  const spool = recording && spoolOf(app, config, recording);
  const recorder = recording ? new UsageRecorder({ store: recording, log: app.log, spool }) : undefined;
  // MCP tool calls' records (docs/mcp.md, "Records"): beside the usage records, aged out with them.
  const toolCallRecorder = recorder && toolCalls ? new ToolCallRecorder({ store: toolCalls, log: app.log }) : undefined;
  if (usage && recorder) {
    app.requestObservers.push(usageObserver(recorder, config.environment));
    const retention = new UsageRetention({
      store: usage,
      toolCalls: toolCallRecorder ? toolCalls : undefined,
      retentionMs: config.usage.retentionMs,
      maxBytes: config.usage.maxBytes,
      log: app.log,
    });
    retention.start();
    app.addHook('onClose', async () => {
      await retention.close();
      await recorder.close();
      await toolCallRecorder?.close();
    });
  }
  const tracing = await wireTracing(app, config);
  return {
    recorder,
    toolCallRecorder,
    beginTrace: tracing
      ? (request: FastifyRequest): RequestTrace => tracing.begin(headOf(request), arrivedAtMs(request))
      : undefined,
    tracing,
  };
}

/** When a request arrived, epoch ms (its receive time is a monotonic clock's). */
function arrivedAtMs(request: FastifyRequest): number {
  return Date.now() - (performance.now() - request.receivedAt);
}

/**
 * The local write-ahead spool of this process's usage records, in DATA_DIR (none for an in-memory store), and the
 * replay of the spools that stopped processes left behind: once ready, then hourly (docs/usage.md, "Durability").
 */
function spoolOf(app: FastifyInstance, config: GatewayConfig, store: UsageStore): UsageSpool | undefined {
  if (config.dataDir === ':memory:') return undefined;
  const root = join(config.dataDir, SPOOL_FOLDER);
  const self = ownSpoolOwner();
  const spool = UsageSpool.open(root, self, store, app.log);
  app.answerHold = (release) => spool.afterWrite(release);
  // Every minute: a dead sibling worker's spool, or (once its heartbeat is stale) another container's.
  sweepInBackground(
    app,
    'usage spools could not be replayed',
    (signal) => replayDeadSpools({ root, self, store, log: app.log, signal }),
    SPOOL_REPLAY_EVERY_MS,
  );
  return spool;
}

/** Loads OpenTelemetry only when tracing is on (it is off by default: no module loaded, nothing on the hot path). */
async function wireTracing(app: FastifyInstance, config: GatewayConfig): Promise<GatewayTracing | undefined> {
  if (!config.tracing) return undefined;
  const { GatewayTracing } = await import('../observability/tracing.js');
  const tracing = new GatewayTracing(config.tracing, config.version, config.environment, app.log);
  app.addHook('onClose', async () => {
    await tracing.shutdown();
  });
  app.requestObservers.push((record) => tracing.end(record));
  return tracing;
}
