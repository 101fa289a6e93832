// Throughput step: run bench/load.ts (autocannon) as a pinned child process and sample the
// CPU use of the server and the mock upstream during the measured part of the run.
import { fileURLToPath } from 'node:url';
import { coreBusyPercent, cpuPercent, sampleCores, sampleCpu } from './cpu.js';
import type { CoreSample, CpuSample } from './cpu.js';
import { runToCompletion, spawnPinned } from './proc.js';

export interface LoadConfig {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  connections: number;
  pipelining: number;
  warmupSeconds: number;
  seconds: number;
  /**
   * Wall-clock start and end of the measured window (epoch ms), instead of `warmupSeconds` then `seconds` from
   * the load generator's own start: two load generators started one after the other then measure the same time.
   */
  windowStartEpochMs?: number;
  windowEndEpochMs?: number;
  /** When set, every request gets a fresh `Idempotency-Key` with this prefix. */
  idempotencyKeyPrefix?: string;
}

export interface LoadResult {
  requestsPerSecMean: number;
  requestsPerSecStddev: number;
  /** Answered in the measured window. */
  totalRequests: number;
  /** Answered during the warm-up, on the same connections. */
  warmupRequests: number;
  durationSec: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Status codes of the whole run, warm-up included. */
  statusCodes: Record<string, number>;
  warmupNon2xx: number;
  warmupErrors: number;
  /** CPU time of this process during the measured run, as % of one core. */
  cpuPercent: number;
}

export interface ThroughputRun {
  load: LoadResult;
  /** % of one core used by the server under test during the measured run. */
  serverCpu?: number;
  /** % of one core used by the mock upstream during the measured run. */
  upstreamCpu?: number;
  /** Busy % of each core during the measured run (whole machine, /proc/stat). */
  cores?: number[];
}

const LOAD_SCRIPT = fileURLToPath(new URL('../load.ts', import.meta.url));

export async function runThroughput(
  cfg: LoadConfig,
  where: { core: number; serverPid: number | undefined; upstreamPid: number | undefined },
): Promise<ThroughputRun> {
  const child = spawnPinned({
    core: where.core,
    cmd: process.execPath,
    args: ['--import', 'tsx', LOAD_SCRIPT, JSON.stringify(cfg)],
    env: { ...process.env, BENCH_EXIT_WITH_PARENT: '1' },
  });
  let start: { server?: CpuSample | undefined; upstream?: CpuSample | undefined; cores?: CoreSample | undefined } = {};
  const out: { run?: ThroughputRun } = {};
  const timeoutMs = (cfg.warmupSeconds + cfg.seconds) * 1_000 + 60_000;
  await runToCompletion(child, 'load generator', timeoutMs, (line) => {
    if (line === 'WARMED') {
      start = { server: sampleCpu(where.serverPid), upstream: sampleCpu(where.upstreamPid), cores: sampleCores() };
    } else if (line.startsWith('RESULT ')) {
      const serverCpu = cpuPercent(start.server, sampleCpu(where.serverPid));
      const upstreamCpu = cpuPercent(start.upstream, sampleCpu(where.upstreamPid));
      const cores = coreBusyPercent(start.cores, sampleCores());
      out.run = {
        load: JSON.parse(line.slice('RESULT '.length)) as LoadResult,
        ...(serverCpu !== undefined ? { serverCpu } : {}),
        ...(upstreamCpu !== undefined ? { upstreamCpu } : {}),
        ...(cores !== undefined ? { cores } : {}),
      };
    }
  });
  if (out.run === undefined) throw new Error('load generator printed no RESULT line');
  return out.run;
}
