// Paired measurement: two targets on the SAME core under load AT THE SAME TIME, so both see the same machine.
// Used by bench/paired.ts (any two targets) and by bench/run.ts (the cost of usage records + metrics).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLIENT_HEADERS, LOAD_CORE, S, loadShapeOf, log } from './config.js';
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
   * Start both sides' servers anew every round, the two sides swapping slots every other round (default). One
   * process can be a few % faster or slower than another of the same build for its whole life (code and heap
   * layout, JIT decisions); with one pair of processes for every round that luck is counted as a difference
   * between the targets.
   */
  fresh: boolean;
  upstreamOrigin: string;
  upstreamPid: number | undefined;
  /**
   * Processes per side (default 1), all on the one core at once, each loaded with half of BENCH_CONNECTIONS:
   * a side's throughput is the sum of its processes'. One process of a build can run a few % faster or slower
   * than another for its whole life (what V8 inlined, how its young generation grew); with two per side that
   * luck averages out within the round instead of only across rounds.
   */
  copies?: number;
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

/** Both sides' processes: `copies` of A then `copies` of B (index `side * copies + k`). */
type Sides = RunningServer[];

async function startSides(
  specs: readonly [TargetSpec, TargetSpec],
  copies: number,
  upstreamOrigin: string,
  tmp: string,
  round: number,
): Promise<Sides> {
  const started: RunningServer[] = [];
  try {
    const bySlot: Array<RunningServer | undefined> = new Array(2 * copies).fill(undefined);
    // Started alternately (first slot, second slot, first, second…), so that neither side's all start first.
    for (let k = 0; k < copies; k++) {
      for (const side of [0, 1]) {
        const dir = path.join(tmp, `round-${round}-target-${side}-copy-${k}`);
        mkdirSync(dir, { recursive: true });
        const server = await startTarget(specs[side] as TargetSpec, upstreamOrigin, dir);
        started.push(server);
        bySlot[side * copies + k] = server;
      }
    }
    return bySlot as Sides;
  } catch (error) {
    for (const s of started) await stopChild(s.child);
    throw error;
  }
}

async function measureRound(
  servers: Sides,
  specs: readonly [TargetSpec, TargetSpec],
  options: PairOptions,
  warmupSeconds: number,
): Promise<PairRound> {
  const copies = servers.length / 2;
  const sideOf = (slot: number) => (slot < copies ? 0 : 1);
  const before = servers.map((s) => sampleCpu(s.child.pid));
  // Load generators start alternately too (A0, B0, A1, B1…: the first slot's first), as the servers did.
  const order = Array.from({ length: copies }, (_, k) => [k, copies + k]).flat();
  // One measured window for all, in wall-clock time: measured from each load generator's own start, the one
  // started last went on alone for its last few hundred ms, with the core to itself, and read 3–5 % better.
  const windowStartEpochMs = Date.now() + LOAD_START_MARGIN_MS + warmupSeconds * 1_000;
  const windowEndEpochMs = windowStartEpochMs + options.seconds * 1_000;
  const runs: Array<Awaited<ReturnType<typeof runThroughput>> | undefined> = new Array(servers.length).fill(undefined);
  await Promise.all(
    order.map(async (slot) => {
      const server = servers[slot] as RunningServer;
      const side = sideOf(slot);
      runs[slot] = await runThroughput(
        {
          url: `${server.origin}${loadShapeOf(specs[side] as TargetSpec, server.chatPath).path}`,
          method: 'POST',
          headers: CLIENT_HEADERS,
          body: loadShapeOf(specs[side] as TargetSpec, server.chatPath).body,
          connections: Math.max(1, Math.floor(S.connections / 2)),
          pipelining: S.pipelining,
          warmupSeconds,
          seconds: options.seconds,
          windowStartEpochMs,
          windowEndEpochMs,
          ...(specs[side]?.idempotencyKeys
            ? { idempotencyKeyPrefix: `pair-${slot}-${process.pid}-${Date.now()}` }
            : {}),
        },
        { core: LOAD_CORE, serverPid: server.child.pid, upstreamPid: options.upstreamPid },
      );
    }),
  );
  const after = servers.map((s) => sampleCpu(s.child.pid));
  const done = runs as Array<NonNullable<(typeof runs)[0]>>;
  const problems = done.flatMap((r, slot) =>
    r.load.non2xx + r.load.errors > 0
      ? [`${specs[sideOf(slot)]?.name}: non-2xx ${r.load.non2xx}, errors ${r.load.errors}`]
      : [],
  );
  if (problems.length > 0) throw new Error(problems.join('; '));
  // Per side: the sum of its processes' throughput; CPU over the whole load (warm-up included) of all its
  // processes divided by every request they answered in it.
  const rps: [number, number] = [0, 0];
  const cpuSec: [number, number] = [0, 0];
  const requests: [number, number] = [0, 0];
  done.forEach((r, slot) => {
    const side = sideOf(slot);
    rps[side] += r.load.requestsPerSecMean;
    cpuSec[side] += (after[slot]?.cpuSec ?? NaN) - (before[slot]?.cpuSec ?? NaN);
    requests[side] += r.load.totalRequests + r.load.warmupRequests;
  });
  return { rps, usPerRequest: [(cpuSec[0] / requests[0]) * 1e6, (cpuSec[1] / requests[1]) * 1e6] };
}

/** B's throughput as % of A's in one round. */
export function roundThroughputPct(r: PairRound): number {
  return (r.rps[1] / r.rps[0]) * 100;
}

/** A's CPU per request as % of B's in one round. */
function roundCpuPct(r: PairRound): number {
  return (r.usPerRequest[0] / r.usPerRequest[1]) * 100;
}

/** B's throughput as % of A's in each round, for the report. */
export function perRoundRatios(result: PairResult): string {
  return result.rounds.map((r) => pct(roundThroughputPct(r))).join(', ');
}

/** Runs the rounds and logs one line per round; the caller prints the summary. */
export async function runPaired(specs: readonly [TargetSpec, TargetSpec], options: PairOptions): Promise<PairResult> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'llm-gateway-pair-'));
  const rounds: PairRound[] = [];
  const copies = Math.max(1, Math.floor(options.copies ?? 1));
  let servers: Sides | undefined;
  try {
    for (let round = 1; round <= options.rounds; round++) {
      // Fresh processes swap slots every other round: B's take the first slot (started and loaded first). The
      // same build on both sides read 103.7 % (median of 6 rounds, 5 of them 102–105 %) for whichever side was in
      // the second slot, with the start order alternating; swapping the slots cancels that, whatever its cause.
      const swapped = options.fresh && round % 2 === 0;
      const placed: readonly [TargetSpec, TargetSpec] = swapped ? [specs[1], specs[0]] : specs;
      if (!servers || options.fresh) {
        if (servers) for (const s of servers) await stopChild(s.child);
        servers = undefined;
        servers = await startSides(placed, copies, options.upstreamOrigin, tmp, round);
      }
      const warmup = options.fresh || round === 1 ? options.warmupSeconds : 1;
      const measured = await measureRound(servers, placed, options, warmup);
      const r: PairRound = swapped
        ? {
            rps: [measured.rps[1], measured.rps[0]],
            usPerRequest: [measured.usPerRequest[1], measured.usPerRequest[0]],
          }
        : measured;
      rounds.push(r);
      log(
        `   ${options.label ?? 'round'} ${round}${options.fresh ? (swapped ? ' (B in the first slot)' : ' (A in the first slot)') : ''}: ${int(r.rps[0])} vs ${int(r.rps[1])} req/s; ` +
          `CPU ${r.usPerRequest[0].toFixed(1)} vs ${r.usPerRequest[1].toFixed(1)} µs/request; B/A throughput ${pct(roundThroughputPct(r))}, A/B CPU per request ${pct(roundCpuPct(r))}`,
      );
    }
  } finally {
    if (servers) for (const s of servers) await stopChild(s.child);
    rmSync(tmp, { recursive: true, force: true });
  }
  return {
    rounds,
    throughputRatio: median(rounds.map(roundThroughputPct)),
    cpuRatio: median(rounds.map(roundCpuPct)),
  };
}
