// Paired measurement: two targets on the SAME core under load AT THE SAME TIME, so both see the same machine.
// Used by bench/paired.ts (any two targets) and by bench/run.ts (the cost of usage records + metrics).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CHAT_BODY, CLIENT_HEADERS, LOAD_CORE, S, log } from './config.js';
import type { TargetSpec } from './config.js';
import { sampleCpu } from './cpu.js';
import { stopChild } from './proc.js';
import { startTarget } from './servers.js';
import type { RunningServer } from './servers.js';
import { int, pct } from './stats.js';
import { runThroughput } from './throughput.js';

export interface PairRound {
  rps: [number, number];
  /** CPU microseconds per answered request. */
  usPerRequest: [number, number];
}

export interface PairResult {
  rounds: PairRound[];
  /** Median over the rounds of B's throughput as % of A's. */
  throughputRatio: number;
  /** Median over the rounds of A's CPU per request as % of B's (above 100 %: B is cheaper). */
  cpuRatio: number;
}

export interface PairOptions {
  rounds: number;
  seconds: number;
  warmupSeconds: number;
  /**
   * Start both servers anew every round, in alternating order (default). One process can be a few % faster or
   * slower than another of the same build for its whole life (code and heap layout, JIT decisions); with one
   * pair of processes for every round that luck is counted as a difference between the targets.
   */
  fresh: boolean;
  upstreamOrigin: string;
  upstreamPid: number | undefined;
  /** Printed once per round. */
  label?: string;
}

/** Time given to both load generators to start (node + tsx) before their warm-up counts. */
const LOAD_START_MARGIN_MS = 3_000;

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? NaN) : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
}

async function startPair(specs: readonly [TargetSpec, TargetSpec], upstreamOrigin: string, tmp: string, round: number, reversed: boolean): Promise<[RunningServer, RunningServer]> {
  const started: RunningServer[] = [];
  try {
    const order = reversed ? [1, 0] : [0, 1];
    const byIndex: Array<RunningServer | undefined> = [undefined, undefined];
    for (const i of order) {
      const dir = path.join(tmp, `round-${round}-target-${i}`);
      mkdirSync(dir, { recursive: true });
      const server = await startTarget(specs[i] as TargetSpec, upstreamOrigin, dir);
      started.push(server);
      byIndex[i] = server;
    }
    return byIndex as [RunningServer, RunningServer];
  } catch (error) {
    for (const s of started) await stopChild(s.child);
    throw error;
  }
}

async function measureRound(servers: [RunningServer, RunningServer], specs: readonly [TargetSpec, TargetSpec], options: PairOptions, warmupSeconds: number, reversed: boolean): Promise<PairRound> {
  const before = servers.map((s) => sampleCpu(s.child.pid));
  const order = reversed ? [1, 0] : [0, 1];
  // One measured window for both, in wall-clock time: measured from each load generator's own start, the one
  // started second went on alone for its last few hundred ms, with the core to itself, and read 3–5 % better.
  const windowStartEpochMs = Date.now() + LOAD_START_MARGIN_MS + warmupSeconds * 1_000;
  const windowEndEpochMs = windowStartEpochMs + options.seconds * 1_000;
  const runs: Array<Awaited<ReturnType<typeof runThroughput>> | undefined> = [undefined, undefined];
  await Promise.all(
    order.map(async (i) => {
      const server = servers[i] as RunningServer;
      runs[i] = await runThroughput(
        {
          url: `${server.origin}${server.chatPath}`,
          method: 'POST',
          headers: CLIENT_HEADERS,
          body: CHAT_BODY,
          connections: Math.max(1, Math.floor(S.connections / 2)),
          pipelining: S.pipelining,
          warmupSeconds,
          seconds: options.seconds,
          windowStartEpochMs,
          windowEndEpochMs,
          ...(specs[i]?.idempotencyKeys ? { idempotencyKeyPrefix: `pair-${i}-${process.pid}-${Date.now()}` } : {}),
        },
        { core: LOAD_CORE, serverPid: server.child.pid, upstreamPid: options.upstreamPid },
      );
    }),
  );
  const after = servers.map((s) => sampleCpu(s.child.pid));
  const [ra, rb] = runs as [NonNullable<(typeof runs)[0]>, NonNullable<(typeof runs)[0]>];
  const problems = [ra, rb].flatMap((r, i) => (r.load.non2xx + r.load.errors > 0 ? [`${specs[i]?.name}: non-2xx ${r.load.non2xx}, errors ${r.load.errors}`] : []));
  if (problems.length > 0) throw new Error(problems.join('; '));
  // CPU over the whole load (warm-up included) divided by every request sent in it.
  const cpuSec = [0, 1].map((i) => (after[i]?.cpuSec ?? NaN) - (before[i]?.cpuSec ?? NaN));
  const requests = [ra, rb].map((r) => r.load.totalRequests + r.load.warmupRequests);
  return {
    rps: [ra.load.requestsPerSecMean, rb.load.requestsPerSecMean],
    usPerRequest: [((cpuSec[0] ?? NaN) / (requests[0] ?? NaN)) * 1e6, ((cpuSec[1] ?? NaN) / (requests[1] ?? NaN)) * 1e6],
  };
}

/** B's throughput as % of A's in each round, for the report. */
export function perRoundRatios(result: PairResult): string {
  return result.rounds.map((r) => pct((r.rps[1] / r.rps[0]) * 100)).join(', ');
}

/** Runs the rounds and logs one line per round; the caller prints the summary. */
export async function runPaired(specs: readonly [TargetSpec, TargetSpec], options: PairOptions): Promise<PairResult> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'llm-gateway-pair-'));
  const rounds: PairRound[] = [];
  let servers: [RunningServer, RunningServer] | undefined;
  try {
    for (let round = 1; round <= options.rounds; round++) {
      // Fresh pairs alternate which side starts first and is loaded first; a kept pair keeps its order.
      const reversed = options.fresh && round % 2 === 0;
      if (!servers || options.fresh) {
        if (servers) for (const s of servers) await stopChild(s.child);
        servers = undefined;
        servers = await startPair(specs, options.upstreamOrigin, tmp, round, reversed);
      }
      const warmup = options.fresh || round === 1 ? options.warmupSeconds : 1;
      const r = await measureRound(servers, specs, options, warmup, reversed);
      rounds.push(r);
      log(
        `   ${options.label ?? 'round'} ${round}${options.fresh ? (reversed ? ' (B started first)' : ' (A started first)') : ''}: ${int(r.rps[0])} vs ${int(r.rps[1])} req/s; ` +
          `CPU ${r.usPerRequest[0].toFixed(1)} vs ${r.usPerRequest[1].toFixed(1)} µs/request; B/A throughput ${pct((r.rps[1] / r.rps[0]) * 100)}, A/B CPU per request ${pct((r.usPerRequest[0] / r.usPerRequest[1]) * 100)}`,
      );
    }
  } finally {
    if (servers) for (const s of servers) await stopChild(s.child);
    rmSync(tmp, { recursive: true, force: true });
  }
  return {
    rounds,
    throughputRatio: median(rounds.map((r) => (r.rps[1] / r.rps[0]) * 100)),
    cpuRatio: median(rounds.map((r) => (r.usPerRequest[0] / r.usPerRequest[1]) * 100)),
  };
}
