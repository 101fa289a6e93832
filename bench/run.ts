// Bench orchestrator: gateway vs a bare Node passthrough (the floor), side by side, one run.
//   npm run bench            (builds, then runs this file)
//   BENCH_SECONDS=3 BENCH_LATENCY_REQUESTS=500 node --import tsx bench/run.ts
// Server under test on core 0; mock upstream, load generator and this process on core 1.
// See bench/README.md for the method and the BENCH_* environment variables.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LOAD_CORE, PROBE_DEADLINE_MS, ROOT, S, SERVER_CORE, log, loud } from './lib/config.js';
import { coreBusyPercent, sampleCores } from './lib/cpu.js';
import { measurePass, measureUpstream } from './lib/measure.js';
import { hasTaskset, killAllSync, pinSelf, stopChild } from './lib/proc.js';
import {
  bottleneckNote,
  failureCount,
  foreignLoadNote,
  renderComparison,
  renderCpu,
  renderPairedRatios,
} from './lib/report.js';
import type { TargetResult } from './lib/report.js';
import { perRoundRatios, roundThroughputPct, runPaired } from './lib/paired.js';
import type { PairResult } from './lib/paired.js';
import { GATEWAY_ENTRY, startMockUpstream } from './lib/servers.js';
import { geometricMeanInterval, pct } from './lib/stats.js';

import { ALL_TARGETS } from './lib/targets.js';
import { runStreamsSection } from './lib/streams.js';
import type { TargetSpec } from './lib/config.js';

/** BENCH_TARGETS=gateway,sqlite-state runs the passthrough (always: it is the baseline) plus the targets named. */
const WANTED = (process.env.BENCH_TARGETS ?? '').split(',').filter(Boolean);
const TARGETS =
  WANTED.length === 0
    ? ALL_TARGETS.filter((t) => t.onlyWhenNamed !== true)
    : ALL_TARGETS.filter((t) => t.id === 'passthrough' || WANTED.includes(t.id));

/**
 * Paired rounds (bench/lib/paired.ts) of the gateway with usage records and metrics on against the same gateway
 * with both off: what they cost, which sequential runs on a drifting VM cannot resolve. 0 skips it.
 */
// Even: the two sides swap slots every other round, and a slot's bias cancels only over pairs of rounds.
const COST_ROUNDS = 2 * Math.ceil(Math.max(0, Math.min(20, Number(process.env.BENCH_COST_ROUNDS ?? 10) || 0)) / 2);
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

function pinning(): string {
  if (!hasTaskset()) {
    loud('WARNING: taskset not found; running UNPINNED. Numbers are not comparable with pinned runs.');
    return 'NONE (taskset missing): servers, upstream and load generator share all cores';
  }
  if (!pinSelf(LOAD_CORE)) {
    loud(`WARNING: could not pin the orchestrator (latency probes) to core ${LOAD_CORE}.`);
    return `server core ${SERVER_CORE}; upstream + autocannon core ${LOAD_CORE}; latency probes UNPINNED`;
  }
  return `server under test on core ${SERVER_CORE}; mock upstream, autocannon and the latency probes on core ${LOAD_CORE}`;
}

/** Busy % per core over one second before anything starts: other load skews every number. */
async function idleCheck(): Promise<string> {
  const a = sampleCores();
  await sleep(1_000);
  const busy = coreBusyPercent(a, sampleCores());
  if (busy === undefined) return 'unknown (no /proc/stat)';
  const text = busy.map((b, i) => `core ${i} ${pct(b)}`).join(', ');
  if (busy.some((b) => b > 15)) {
    loud(`WARNING: the machine is not idle before the bench (${text} busy). Other processes will skew the numbers.`);
    return `${text} busy — NOT IDLE, numbers are skewed`;
  }
  return `${text} busy`;
}

function machineInfo(pin: string, idle: string): string[] {
  return [
    `- date: ${new Date().toISOString()}`,
    `- node: ${process.version}`,
    `- cpu: ${os.cpus()[0]?.model ?? 'unknown'} × ${os.cpus().length}`,
    `- os: ${os.type()} ${os.release()} (${os.arch()})`,
    `- pinning: ${pin}`,
    `- idle check (1 s before start): ${idle}`,
    `- throughput: ${S.warmupSeconds}s warm-up + ${S.seconds}s × ${S.rounds} round(s), ${S.connections} connections, ` +
      `pipelining ${S.pipelining}, warm-up and measured window on the same connections`,
    `- latency: ${S.latencyRequests} sequential requests on 1 keep-alive connection after ${S.latencyWarmup} warm-up; ` +
      `streaming: ${S.streamRequests} after ${S.streamWarmup} warm-up`,
  ];
}

/** Temp dir of this run (server data + logs); removed on success and on Ctrl-C. */
let tmpDir: string | undefined;

async function main(): Promise<number> {
  const pin = pinning();
  if (os.cpus().length < 2) loud('WARNING: fewer than 2 CPUs; the server and the load generator share a core.');

  let targets = [...TARGETS];
  const skipped: string[] = [];
  if (S.gatewayCmd === '' && !existsSync(GATEWAY_ENTRY)) {
    const msg = 'dist/main.js does not exist (not built yet?): measuring only the passthrough.';
    loud(msg);
    skipped.push(msg);
    targets = targets.filter((t) => t.kind !== 'gateway');
  }

  const idle = await idleCheck();
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'llm-gateway-bench-'));
  tmpDir = tmp;
  const upstream = await startMockUpstream();
  log(`mock upstream on ${upstream.origin} (pid ${String(upstream.child.pid)}); temp dir ${tmp}`);

  const reference = await measureUpstream(upstream.origin);
  const results: TargetResult[] = targets.map((t) => ({
    name: t.name,
    isBaseline: t.kind === 'passthrough',
    runs: [],
    problems: [],
  }));
  // Rounds interleave the targets (A B A B ...) so slow drift of the machine hits all alike.
  for (let round = 1; round <= S.rounds; round++) {
    for (const [i, spec] of targets.entries()) {
      const result = results[i];
      if (result === undefined || (round > 1 && result.problems.length > 0)) continue;
      log(`\n== ${spec.name}${S.rounds > 1 ? ` (round ${round}/${S.rounds})` : ''}`);
      const workDir = path.join(tmp, `target-${i}-round-${round}`);
      mkdirSync(workDir, { recursive: true });
      await measurePass(spec, upstream, workDir, round === 1, result);
    }
  }
  // The cost of usage records + metrics: only with the gateway built and the plain gateway among the targets.
  let cost: string | undefined;
  const specs = costSpecs();
  if (COST_ROUNDS > 0 && specs && targets.some((t) => t.id === 'gateway')) {
    log(
      `\n== cost of usage records + metrics: paired, ${COST_ROUNDS} rounds, ${S.pairCopies} process(es) per side (BENCH_COST_ROUNDS=0 skips it)`,
    );
    try {
      const result = await runPaired(specs, {
        rounds: COST_ROUNDS,
        seconds: S.seconds,
        warmupSeconds: S.pairWarmupSeconds,
        fresh: true,
        copies: S.pairCopies,
        upstreamOrigin: upstream.origin,
        upstreamPid: upstream.child.pid,
        label: 'pair',
      });
      cost = renderCost(result, specs);
    } catch (error) {
      const message = `cost of usage records + metrics: ${error instanceof Error ? error.message : String(error)}`;
      const first = results[0];
      if (first) first.problems.push(message);
      else loud(message);
    }
  }
  await stopChild(upstream.child);

  // N concurrent slow streams, passthrough and gateway (bench/lib/streams.ts); BENCH_STREAMS=0 skips it.
  let streams: string | undefined;
  if (S.streams > 0) {
    try {
      const section = await runStreamsSection({
        streams: S.streams,
        chunks: S.streamChunks,
        intervalMs: S.streamIntervalMs,
        workers: 1,
        targets: targets.some((t) => t.kind === 'gateway') ? ['passthrough', 'gateway'] : ['passthrough'],
        workDir: tmp,
      });
      streams = section.markdown;
      if (section.failed) results[0]?.problems.push('streams: some streams were lost (see the streams table)');
    } catch (error) {
      results[0]?.problems.push(`streams: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  const refProblems =
    (reference.latency ? reference.latency.bad + reference.latency.errors : 0) +
    (reference.stream ? reference.stream.bad + reference.stream.errors : 0);
  const problems = results.flatMap((r) => r.problems);
  if (refProblems > 0) problems.push(`mock upstream answered ${refProblems} times with non-2xx or errors`);

  const notes = results
    .flatMap((r) => [bottleneckNote(r, SERVER_CORE, LOAD_CORE), foreignLoadNote(r, SERVER_CORE, LOAD_CORE)])
    .filter((n): n is string => n !== undefined);
  for (const n of notes) if (n.startsWith('WARNING')) loud(n);
  const paired = renderPairedRatios(results, [ALL_TARGETS[0]?.name ?? '', 'gateway']);
  const md = [
    '# Gateway benchmark',
    '',
    ...machineInfo(pin, idle),
    '',
    renderComparison(results, reference, S.connections),
    '',
    '"added" = target percentile − the same percentile measured directly against the mock upstream.',
    'Stream TTFB = time from sending the request to the first body chunk; stream end = to the last byte.',
    '',
    ...(paired ? ['## Throughput ratios within each round', '', paired, ''] : []),
    ...(cost ? ['## What usage records and metrics cost', '', cost, ''] : []),
    ...(streams
      ? [
          '## Concurrent slow streams',
          '',
          streams,
          '',
          'More streams, workers, a config: `npm run bench:streams -- --streams 10000 --workers 2` (bench/README.md).',
          '',
        ]
      : []),
    '## CPU during the throughput run (% of one core)',
    '',
    'Core busy % is machine-wide (/proc/stat: includes kernel, softirq and any other process on that core);',
    'process % is user + system time of that process only (loopback networking partly lands in softirq instead).',
    '',
    renderCpu(results, SERVER_CORE, LOAD_CORE),
    '',
    ...notes.map((n) => `- ${n}`),
    ...(skipped.length > 0 ? ['', ...skipped.map((s) => `- SKIPPED: ${s}`)] : []),
    ...(problems.length > 0 ? ['', '## PROBLEMS (run failed)', '', ...problems.map((p) => `- ${p}`)] : []),
    '',
  ].join('\n');

  log(`\n${md}`);
  const outDir = path.join(ROOT, 'bench/results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, 'latest.md'), md);
  log(`written to ${path.join(outDir, 'latest.md')}`);

  const failed = problems.length > 0 || results.some((r) => failureCount(r) > 0);
  if (failed || S.keepTmp) log(`temp dir kept (server logs): ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
  if (failed) loud(`BENCH FAILED: ${problems.length} problem(s), see above. Exit code 1.`);
  return failed ? 1 : 0;
}

process.on('exit', killAllSync);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(sig, () => {
    process.stderr.write(`\nbench: ${sig} received, stopping child processes\n`);
    killAllSync();
    if (tmpDir !== undefined && !S.keepTmp) rmSync(tmpDir, { recursive: true, force: true });
    process.exit(130);
  });
}

// Hard upper bound on the whole run, whatever hangs.
const perPassSec = S.warmupSeconds + S.seconds + 90;
const costSec = COST_ROUNDS * (S.pairWarmupSeconds + S.seconds + 30 * S.pairCopies + 30);
const streamsSec = S.streams > 0 ? 2 * ((3 * (S.streamChunks * S.streamIntervalMs)) / 1_000 + 90) : 0;
const budgetSec =
  TARGETS.length * (S.rounds * perPassSec + (2 * PROBE_DEADLINE_MS) / 1_000) +
  (2 * PROBE_DEADLINE_MS) / 1_000 +
  costSec +
  streamsSec +
  60;
setTimeout(() => {
  loud(`bench: exceeded the time budget of ${budgetSec} s; killing everything.`);
  killAllSync();
  process.exit(1);
}, budgetSec * 1_000).unref();

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    loud(`bench crashed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    killAllSync();
    process.exit(1);
  },
);
