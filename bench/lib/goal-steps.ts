// The two steps of `npm run bench` that are not throughput: the idle footprint (issue 33's fourth row) and many
// slow streams at once (the fifth). Each returns what the goals table needs, or a string saying why it did not run.
import { ADMIN_TOKEN, S, UPSTREAM_API_KEY, log } from './config.js';
import { measureIdle } from './idle-rss.js';
import type { IdleProcess } from './idle-rss.js';
import { baseEnv, gatewayCommand } from './servers.js';
import { runStreamsSection } from './streams.js';
import type { StreamsOptions, TargetOutcome } from './streams.js';

export type IdleFigures = { single: IdleProcess[]; two: IdleProcess[] } | string;

/** Idle RSS of the gateway as the bench starts it (GATEWAY_ENV=prod, the mock upstream), one worker then two. */
export async function idleStep(upstreamOrigin: string): Promise<{ figures: IdleFigures; markdown?: string }> {
  if (!S.idleRss) return { figures: 'BENCH_IDLE_RSS=0' };
  const [cmd, args] = gatewayCommand({ id: 'gateway', name: 'gateway', kind: 'gateway' });
  const env = {
    ...baseEnv(),
    HOST: '127.0.0.1',
    GATEWAY_ENV: 'prod',
    ADMIN_TOKEN,
    UPSTREAM_BASE_URL: `${upstreamOrigin}/v1`,
    UPSTREAM_API_KEY,
    LOG_LEVEL: 'info',
  };
  log('\n== idle RSS: the gateway alone, 3 s after every process started, WORKERS=1 then WORKERS=2');
  const single = await measureIdle(1, [cmd, ...args], env);
  const two = await measureIdle(2, [cmd, ...args], env);
  const lines = [...single.map((p) => ['1', p] as const), ...two.map((p) => ['2', p] as const)].map(
    ([w, p]) => `| WORKERS=${w} | ${p.role} | ${p.rssMb.toFixed(1)} | ${p.heapUsedMb.toFixed(1)} |`,
  );
  const markdown = ['| run | process | RSS (MB) | V8 heap used (MB) |', '| --- | --- | ---: | ---: |', ...lines].join(
    '\n',
  );
  log(markdown);
  return { figures: { single, two }, markdown };
}

export interface StreamsStep {
  figures: { outcomes: readonly TargetOutcome[]; options: StreamsOptions } | string;
  markdown?: string;
  /** Problems that fail the run: streams the gateway lost. */
  problems: string[];
  /** Said in the report, not a failure: streams the passthrough lost (the floor, not what is measured). */
  notes: string[];
}

/** N streams at once through the passthrough and the gateway (BENCH_STREAMS, 0 skips). */
export async function streamsStep(withGateway: boolean, workDir: string): Promise<StreamsStep> {
  if (S.streams === 0) return { figures: 'BENCH_STREAMS=0', problems: [], notes: [] };
  const options: StreamsOptions = {
    streams: S.streams,
    chunks: S.streamChunks,
    intervalMs: S.streamIntervalMs,
    workers: S.streamWorkers,
    targets: withGateway ? ['passthrough', 'gateway'] : ['passthrough'],
    workDir,
    // A first-byte reference next to the gateway even where one process cannot hold every stream.
    passthroughPastLimit: true,
  };
  const section = await runStreamsSection(options);
  const lost = (id: string) => section.outcomes.find((o) => o.id === id && (o.result?.lost ?? 0) > 0);
  const gateway = lost('gateway');
  const floor = lost('passthrough');
  return {
    figures: { outcomes: section.outcomes, options },
    markdown: section.markdown,
    problems: gateway
      ? [`streams: the gateway lost ${gateway.result?.lost ?? '?'} streams (see the streams table)`]
      : [],
    notes: floor ? [`streams: the passthrough lost ${floor.result?.lost ?? '?'} streams (see the streams table)`] : [],
  };
}
