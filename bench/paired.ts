// Paired bench: two targets on the SAME core under load AT THE SAME TIME, so both see the same machine.
//   npm run bench:pair                       (gateway vs anthropic)
//   BENCH_PAIR=gateway,gemini BENCH_ROUNDS=5 BENCH_SECONDS=5 node --import tsx bench/paired.ts
//   BENCH_PAIR=gateway,gateway BENCH_PAIR_A_CMD="node /tmp/old/dist/main.js" ...   (two builds, same target)
// Why: on a shared VM the speed of a core drifts by tens of percent between runs a few seconds apart, far more
// than the few percent a feature costs; sequential runs cannot resolve it. Here the scheduler splits core 0
// between always-busy servers (BENCH_PAIR_COPIES per side, default 2), each loaded with half the connections from
// core 1, and the report gives each side's CPU time per request (from /proc) and the ratio of the two, round by
// round. All servers are started anew every round (BENCH_PAIR_FRESH=0 keeps one set for all rounds), and the two
// sides swap slots (start order, load order, position) every other round.
import { LOAD_CORE, S, log, loud } from './lib/config.js';
import type { TargetSpec } from './lib/config.js';
import { perRoundRatios, runPaired } from './lib/paired.js';
import type { PairResult } from './lib/paired.js';
import { hasTaskset, killAllSync, pinSelf, stopChild } from './lib/proc.js';
import { startMockUpstream } from './lib/servers.js';
import { pct } from './lib/stats.js';
import { ALL_TARGETS } from './lib/targets.js';

function pickTargets(): [TargetSpec, TargetSpec] {
  const ids = (process.env.BENCH_PAIR ?? 'gateway,anthropic').split(',').map((s) => s.trim());
  const specs = ids.map((id) => ALL_TARGETS.find((t) => t.id === id));
  const [a, b] = specs;
  if (specs.length !== 2 || !a || !b) {
    throw new Error(
      `BENCH_PAIR must name two targets of: ${ALL_TARGETS.map((t) => t.id).join(', ')} (got "${ids.join(',')}")`,
    );
  }
  // BENCH_PAIR_A_CMD / BENCH_PAIR_B_CMD: another build for one side (BENCH_PAIR=gateway,gateway compares two builds).
  const withCommand = (spec: TargetSpec, side: 'A' | 'B'): TargetSpec => {
    const command = process.env[`BENCH_PAIR_${side}_CMD`]?.trim();
    return command ? { ...spec, name: `${spec.name} [${command}]`, command } : spec;
  };
  return [withCommand(a, 'A'), withCommand(b, 'B')];
}

async function main(): Promise<void> {
  const specs = pickTargets();
  if (!hasTaskset() || !pinSelf(LOAD_CORE))
    loud('WARNING: taskset not available: the two servers are not pinned to one core; the ratio means little.');
  const fresh = process.env.BENCH_PAIR_FRESH !== '0';
  const upstream = await startMockUpstream();
  let result: PairResult;
  try {
    log(
      `== paired: "${specs[0].name}" and "${specs[1].name}" on one core, ${S.rounds} round(s) of ${S.seconds}s, ${S.pairCopies} process(es) per side with ${Math.floor(S.connections / 2)} connections each, ` +
        (fresh ? 'both servers started anew every round' : 'one pair of processes for every round'),
    );
    result = await runPaired(specs, {
      rounds: S.rounds,
      seconds: S.seconds,
      warmupSeconds: S.pairWarmupSeconds,
      fresh,
      copies: S.pairCopies,
      upstreamOrigin: upstream.origin,
      upstreamPid: upstream.child.pid,
    });
  } finally {
    await stopChild(upstream.child);
  }
  log(
    [
      '',
      `| A | B | rounds | B's throughput as % of A's (median) | A's CPU per request as % of B's (median) |`,
      '| --- | --- | ---: | ---: | ---: |',
      `| ${specs[0].name} | ${specs[1].name} | ${result.rounds.length} | **${pct(result.throughputRatio)}** | **${pct(result.cpuRatio)}** |`,
      '',
      `Per round, B/A throughput: ${perRoundRatios(result)}`,
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
