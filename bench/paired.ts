// Paired bench: two targets on the SAME core under load AT THE SAME TIME, so both see the same machine.
//   npm run bench:pair                       (gateway vs anthropic)
//   BENCH_PAIR=gateway,gemini BENCH_ROUNDS=5 BENCH_SECONDS=5 node --import tsx bench/paired.ts
//   BENCH_PAIR=gateway,gateway BENCH_PAIR_A_CMD="node /tmp/old/dist/main.js" ...   (two builds, same target)
// Why: on a shared VM the speed of a core drifts by tens of percent between runs a few seconds apart, far more
// than the few percent a feature costs; sequential runs cannot resolve it. Here the scheduler splits core 0
// between two always-busy servers, each loaded with half the connections from core 1, and the report gives each
// one's CPU time per request (from /proc) and the ratio of the two, round by round.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CHAT_BODY, CLIENT_HEADERS, LOAD_CORE, S, log, loud } from './lib/config.js';
import type { TargetSpec } from './lib/config.js';
import { cpuPercent, sampleCpu } from './lib/cpu.js';
import { hasTaskset, killAllSync, pinSelf, stopChild } from './lib/proc.js';
import { startMockUpstream, startTarget } from './lib/servers.js';
import type { RunningServer } from './lib/servers.js';
import { int, pct } from './lib/stats.js';
import { ALL_TARGETS } from './lib/targets.js';
import { runThroughput } from './lib/throughput.js';

interface Round {
  rps: [number, number];
  cpuPercent: [number, number];
  /** CPU microseconds per answered request. */
  usPerRequest: [number, number];
}

function pickTargets(): [TargetSpec, TargetSpec] {
  const ids = (process.env.BENCH_PAIR ?? 'gateway,anthropic').split(',').map((s) => s.trim());
  const specs = ids.map((id) => ALL_TARGETS.find((t) => t.id === id));
  const [a, b] = specs;
  if (specs.length !== 2 || !a || !b) {
    throw new Error(`BENCH_PAIR must name two targets of: ${ALL_TARGETS.map((t) => t.id).join(', ')} (got "${ids.join(',')}")`);
  }
  // BENCH_PAIR_A_CMD / BENCH_PAIR_B_CMD: another build for one side (BENCH_PAIR=gateway,gateway compares two builds).
  const withCommand = (spec: TargetSpec, side: 'A' | 'B'): TargetSpec => {
    const command = process.env[`BENCH_PAIR_${side}_CMD`]?.trim();
    return command ? { ...spec, name: `${spec.name} [${command}]`, command } : spec;
  };
  return [withCommand(a, 'A'), withCommand(b, 'B')];
}

async function oneRound(servers: [RunningServer, RunningServer], specs: [TargetSpec, TargetSpec], upstreamPid: number | undefined, warmupSeconds: number): Promise<Round> {
  const before = servers.map((s) => sampleCpu(s.child.pid));
  const runs = await Promise.all(
    servers.map((server, i) =>
      runThroughput(
        {
          url: `${server.origin}${server.chatPath}`,
          method: 'POST',
          headers: CLIENT_HEADERS,
          body: CHAT_BODY,
          connections: Math.max(1, Math.floor(S.connections / 2)),
          pipelining: S.pipelining,
          workers: 0,
          warmupSeconds,
          seconds: S.seconds,
          ...(specs[i]?.idempotencyKeys ? { idempotencyKeyPrefix: `pair-${i}-${process.pid}-${Date.now()}` } : {}),
        },
        { core: LOAD_CORE, serverPid: server.child.pid, upstreamPid },
      ),
    ),
  );
  const after = servers.map((s) => sampleCpu(s.child.pid));
  const problems = runs.flatMap((r, i) => (r.load.non2xx + r.load.errors > 0 ? [`${specs[i]?.name}: non-2xx ${r.load.non2xx}, errors ${r.load.errors}`] : []));
  if (problems.length > 0) throw new Error(problems.join('; '));
  const [ra, rb] = runs as [(typeof runs)[0], (typeof runs)[0]];
  // CPU over the whole load (warm-up included) divided by every request sent in it.
  const cpuSec = [0, 1].map((i) => (after[i]?.cpuSec ?? NaN) - (before[i]?.cpuSec ?? NaN));
  const requests = [ra, rb].map((r) => r.load.totalRequests + r.load.requestsPerSecMean * warmupSeconds);
  return {
    rps: [ra.load.requestsPerSecMean, rb.load.requestsPerSecMean],
    cpuPercent: [ra.serverCpu ?? cpuPercent(before[0], after[0]) ?? NaN, rb.serverCpu ?? cpuPercent(before[1], after[1]) ?? NaN],
    usPerRequest: [((cpuSec[0] ?? NaN) / (requests[0] ?? NaN)) * 1e6, ((cpuSec[1] ?? NaN) / (requests[1] ?? NaN)) * 1e6],
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? NaN) : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
}

async function main(): Promise<void> {
  const specs = pickTargets();
  if (!hasTaskset() || !pinSelf(LOAD_CORE)) loud('WARNING: taskset not available: the two servers are not pinned to one core; the ratio means little.');
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'llm-gateway-pair-'));
  const upstream = await startMockUpstream();
  const servers: RunningServer[] = [];
  const rounds: Round[] = [];
  try {
    for (const [i, spec] of specs.entries()) {
      const dir = path.join(tmp, `target-${i}`);
      mkdirSync(dir, { recursive: true });
      servers.push(await startTarget(spec, upstream.origin, dir));
    }
    const pair = servers as [RunningServer, RunningServer];
    log(`== paired: "${specs[0].name}" and "${specs[1].name}" on one core, ${S.rounds} round(s) of ${S.seconds}s, ${Math.floor(S.connections / 2)} connections each`);
    for (let round = 1; round <= S.rounds; round++) {
      const r = await oneRound(pair, specs, upstream.child.pid, round === 1 ? S.warmupSeconds : 1);
      rounds.push(r);
      log(
        `   round ${round}: ${int(r.rps[0])} vs ${int(r.rps[1])} req/s; CPU ${r.usPerRequest[0].toFixed(1)} vs ${r.usPerRequest[1].toFixed(1)} µs/request ` +
          `(${pct(r.cpuPercent[0])} / ${pct(r.cpuPercent[1])} of the core); B/A throughput ${pct((r.rps[1] / r.rps[0]) * 100)}, A/B CPU per request ${pct((r.usPerRequest[0] / r.usPerRequest[1]) * 100)}`,
      );
    }
  } finally {
    for (const s of servers) await stopChild(s.child);
    await stopChild(upstream.child);
    rmSync(tmp, { recursive: true, force: true });
  }
  const rpsRatio = median(rounds.map((r) => (r.rps[1] / r.rps[0]) * 100));
  const cpuRatio = median(rounds.map((r) => (r.usPerRequest[0] / r.usPerRequest[1]) * 100));
  log(
    [
      '',
      `| A | B | rounds | B's throughput as % of A's (median) | A's CPU per request as % of B's (median) |`,
      '| --- | --- | ---: | ---: | ---: |',
      `| ${specs[0].name} | ${specs[1].name} | ${rounds.length} | **${pct(rpsRatio)}** | **${pct(cpuRatio)}** |`,
      '',
      `Per round, B/A throughput: ${rounds.map((r) => pct((r.rps[1] / r.rps[0]) * 100)).join(', ')}`,
    ].join('\n'),
  );
}

process.on('SIGINT', () => {
  killAllSync();
  process.exit(130);
});
main().catch((error: unknown) => {
  loud(`PAIRED BENCH FAILED: ${error instanceof Error ? error.message : String(error)}`);
  killAllSync();
  process.exit(1);
});
