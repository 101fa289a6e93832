// The cost of usage records + metrics in `npm run bench` (opt-in, BENCH_COST_ROUNDS): paired rounds of the gateway
// with both off against the same gateway with both on (bench/lib/paired.ts).
import { S, SERVER_CORE, log } from './config.js';
import type { TargetSpec } from './config.js';
import { perRoundRatios, roundThroughputPct, runPaired } from './paired.js';
import type { PairResult } from './paired.js';
import { geometricMeanInterval, pct } from './stats.js';
import { ALL_TARGETS } from './targets.js';

/**
 * Paired rounds of the gateway with usage records and metrics on against the same gateway with both off: what
 * they cost, which sequential runs on a drifting VM cannot resolve. 0 (the default) skips it.
 */
// Even: the two sides swap slots every other round, and a slot's bias cancels only over pairs of rounds.
export const COST_ROUNDS =
  2 * Math.ceil(Math.max(0, Math.min(20, Number(process.env.BENCH_COST_ROUNDS ?? 0) || 0)) / 2);
const COST_PAIR = ['observability-off', 'observability-on'] as const;

function costSpecs(): [TargetSpec, TargetSpec] | undefined {
  const [off, on] = COST_PAIR.map((id) => ALL_TARGETS.find((t) => t.id === id));
  return off && on ? [off, on] : undefined;
}

/** The cost section of the report: B = both on, A = both off. */
function renderCost(result: PairResult, specs: [TargetSpec, TargetSpec]): string {
  const cost = 100 - result.throughputRatio;
  const g = geometricMeanInterval(result.rounds.map(roundThroughputPct));
  const interval = Number.isNaN(g.low)
    ? ''
    : `; geometric mean of the rounds ${(100 - g.mean).toFixed(1)} %, 95 % interval ${(100 - g.high).toFixed(1)}–${(100 - g.low).toFixed(1)} %`;
  return [
    `Usage records + Prometheus metrics, on vs off: ${result.rounds.length} paired rounds of ${S.seconds}s after ${S.pairWarmupSeconds}s of warm-up (${S.pairCopies} server process(es) per side, all on core ${SERVER_CORE} at the same time, started anew each round, the two sides swapping slots every other round).`,
    '',
    "| A | B | B's throughput as % of A's (median) | A's CPU per request as % of B's (median) | cost of records + metrics |",
    '| --- | --- | ---: | ---: | ---: |',
    `| ${specs[0].name} | ${specs[1].name} | ${pct(result.throughputRatio)} | ${pct(result.cpuRatio)} | **${cost.toFixed(1)} % of throughput** (goal ≤ 5 %) |`,
    '',
    `Per round, B/A throughput: ${perRoundRatios(result)}`,
    '',
    `Cost: ${cost.toFixed(1)} % by the median${interval}. Single rounds spread a few % (the same build on both sides: 94.7–106.4 %, two processes per side): an interval that straddles 5 % does not settle the goal either way.`,
  ].join('\n');
}

/** Runs the paired rounds; the section's markdown, or undefined when there is nothing to run. Throws on failure. */
export async function runCostSection(upstream: {
  origin: string;
  pid: number | undefined;
}): Promise<string | undefined> {
  const specs = costSpecs();
  if (COST_ROUNDS === 0 || specs === undefined) return undefined;
  log(`\n== cost of usage records + metrics: paired, ${COST_ROUNDS} rounds, ${S.pairCopies} process(es) per side`);
  const result = await runPaired(specs, {
    rounds: COST_ROUNDS,
    seconds: S.seconds,
    warmupSeconds: S.pairWarmupSeconds,
    fresh: true,
    copies: S.pairCopies,
    upstreamOrigin: upstream.origin,
    upstreamPid: upstream.pid,
    label: 'pair',
  });
  return renderCost(result, specs);
}
