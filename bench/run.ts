// Bench orchestrator: gateway vs a bare Node passthrough (the floor), side by side, one run; it ends with issue
// 33's five goals as one table (bench/lib/goals.ts).
//   npm run build && node --import tsx bench/run.ts      (npm run bench; ~5 minutes on 2 cores)
//   BENCH_SECONDS=3 BENCH_ROUNDS=1 BENCH_STREAMS=1000 BENCH_LATENCY_REQUESTS=500 node --import tsx bench/run.ts
// Server under test on core 0; mock upstream, load generator and this process on core 1.
// See bench/README.md for the method and the BENCH_* environment variables.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LOAD_CORE, PROBE_DEADLINE_MS, ROOT, S, SERVER_CORE, log, loud } from './lib/config.js';
import type { TargetSpec } from './lib/config.js';
import { COST_ROUNDS, runCostSection } from './lib/cost.js';
import { coreBusyPercent, sampleCores } from './lib/cpu.js';
import { idleStep, streamsStep } from './lib/goal-steps.js';
import type { IdleFigures, StreamsStep } from './lib/goal-steps.js';
import { renderGoals } from './lib/goals.js';
import { measurePass, measureUpstream } from './lib/measure.js';
import type { Upstream } from './lib/measure.js';
import { hasTaskset, killAllSync, pinSelf, stopChild } from './lib/proc.js';
import {
  bottleneckNote,
  failureCount,
  foreignLoadNote,
  renderComparison,
  renderCpu,
  renderPairedRatios,
} from './lib/report.js';
import type { Reference, TargetResult } from './lib/report.js';
import { GATEWAY_ENTRY, startMockUpstream } from './lib/servers.js';
import { pct } from './lib/stats.js';
import { ALL_TARGETS } from './lib/targets.js';

/**
 * No BENCH_TARGETS: the targets not marked `onlyWhenNamed` (issue 33's throughput rows). BENCH_TARGETS=gateway,
 * sqlite-state runs the targets named, each with the passthrough it is compared with, and the plain passthrough.
 */
function selectTargets(wanted: readonly string[]): TargetSpec[] {
  if (wanted.length === 0) return ALL_TARGETS.filter((t) => t.onlyWhenNamed !== true);
  const unknown = wanted.filter((id) => !ALL_TARGETS.some((t) => t.id === id));
  if (unknown.length > 0)
    throw new Error(`BENCH_TARGETS: unknown ${unknown.join(', ')}; known: ${ALL_TARGETS.map((t) => t.id).join(', ')}`);
  const ids = new Set(['passthrough', ...wanted]);
  for (const t of ALL_TARGETS) if (ids.has(t.id) && t.baseline !== undefined) ids.add(t.baseline);
  return ALL_TARGETS.filter((t) => ids.has(t.id));
}
const TARGETS = selectTargets((process.env.BENCH_TARGETS ?? '').split(',').filter(Boolean));
/** Throughput rounds: two by default here (issue 33's figures were two runs each); BENCH_ROUNDS sets it. */
const ROUNDS = (process.env.BENCH_ROUNDS ?? '') === '' ? 2 : S.rounds;

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
    `- throughput: ${S.warmupSeconds}s warm-up + ${S.seconds}s × ${ROUNDS} round(s), ${S.connections} connections, ` +
      `pipelining ${S.pipelining}, warm-up and measured window on the same connections`,
    `- latency: ${S.latencyRequests} sequential requests on 1 keep-alive connection after ${S.latencyWarmup} warm-up; ` +
      `streaming: ${S.streamRequests} after ${S.streamWarmup} warm-up`,
  ];
}

/** Temp dir of this run (server data + logs); removed on success and on Ctrl-C. */
let tmpDir: string | undefined;

/** The shared mock upstream (5-piece streams) and one per other chunk count the targets ask for (STREAM_CHUNKS). */
async function startUpstreams(targets: readonly TargetSpec[]): Promise<Map<number, Upstream>> {
  const upstreams = new Map<number, Upstream>();
  for (const chunks of new Set([0, ...targets.map((t) => t.upstreamChunks ?? 0)])) {
    const upstream = await startMockUpstream(
      'bench/mock-upstream.ts',
      chunks > 0 ? { STREAM_CHUNKS: String(chunks) } : {},
    );
    log(
      `mock upstream${chunks > 0 ? ` (${chunks} chunks a stream)` : ''} on ${upstream.origin} (pid ${String(upstream.child.pid)})`,
    );
    upstreams.set(chunks, upstream);
  }
  return upstreams;
}

/** Throughput rounds: the targets interleaved (A B A B ...) so slow drift of the machine hits all alike. */
async function throughputRounds(
  targets: readonly TargetSpec[],
  upstreams: Map<number, Upstream>,
  tmp: string,
): Promise<TargetResult[]> {
  const results: TargetResult[] = targets.map((t) => ({
    id: t.id,
    name: t.name,
    isBaseline: t.kind === 'passthrough',
    baselineId: t.baseline ?? 'passthrough',
    runs: [],
    problems: [],
  }));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [i, spec] of targets.entries()) {
      const result = results[i];
      const upstream = upstreams.get(spec.upstreamChunks ?? 0);
      if (result === undefined || upstream === undefined || (round > 1 && result.problems.length > 0)) continue;
      log(`\n== ${spec.name}${ROUNDS > 1 ? ` (round ${round}/${ROUNDS})` : ''}`);
      const workDir = path.join(tmp, `target-${i}-round-${round}`);
      mkdirSync(workDir, { recursive: true });
      await measurePass(spec, upstream, workDir, round === 1, result);
    }
  }
  return results;
}

interface Sections {
  pin: string;
  idle: string;
  skipped: string[];
  results: TargetResult[];
  reference: Reference;
  cost: string | undefined;
  idleRss: { figures: IdleFigures; markdown?: string };
  streams: StreamsStep;
  retrieval: string | undefined;
  mcp: string | undefined;
  problems: string[];
}

function renderReport(x: Sections): string {
  const { results } = x;
  const notes = results
    .flatMap((r) => [bottleneckNote(r, SERVER_CORE, LOAD_CORE), foreignLoadNote(r, SERVER_CORE, LOAD_CORE)])
    .filter((n): n is string => n !== undefined);
  for (const n of notes) if (n.startsWith('WARNING')) loud(n);
  const paired = renderPairedRatios(results, 'gateway');
  const section = (title: string, body: string | undefined, after: string[] = []) =>
    body === undefined ? [] : [`## ${title}`, '', body, '', ...after];
  return [
    '# Gateway benchmark',
    '',
    ...machineInfo(x.pin, x.idle),
    '',
    renderComparison(results, x.reference, S.connections),
    '',
    '"added" = target percentile − the same percentile measured directly against the mock upstream.',
    'Stream TTFB = time from sending the request to the first body chunk; stream end = to the last byte.',
    '',
    ...section('Throughput ratios within each round', paired),
    ...section('What usage records and metrics cost', x.cost),
    ...section('Idle RSS', x.idleRss.markdown),
    ...section('Concurrent slow streams', x.streams.markdown, [
      ...x.streams.notes.map((n) => `- ${n}`),
      'Other counts, workers, a config: `npm run bench:streams -- --streams 4000 --workers 1` (bench/README.md).',
      '',
    ]),
    ...section('MCP tools/call: direct vs through the gateway', x.mcp, [
      'Alone, other counts: `BENCH_MCP_CALLS=5000 BENCH_MCP_CLIENTS=64 npm run bench:mcp` (bench/mcp.ts).',
      '',
    ]),
    ...section('Retrieval', x.retrieval, [
      'Alone, other sizes: `BENCH_RETRIEVAL_SIZES=10000 npm run bench:retrieval` (bench/retrieval.ts).',
      '',
    ]),
    '## CPU during the throughput run (% of one core)',
    '',
    'Core busy % is machine-wide (/proc/stat: includes kernel, softirq and any other process on that core);',
    'process % is user + system time of that process only (loopback networking partly lands in softirq instead).',
    '',
    renderCpu(results, SERVER_CORE, LOAD_CORE),
    '',
    ...notes.map((n) => `- ${n}`),
    ...(x.skipped.length > 0 ? ['', ...x.skipped.map((s) => `- SKIPPED: ${s}`)] : []),
    ...(x.problems.length > 0 ? ['', '## PROBLEMS (run failed)', '', ...x.problems.map((p) => `- ${p}`)] : []),
    '',
    renderGoals({ results, connections: S.connections, idle: x.idleRss.figures, streams: x.streams.figures }),
    '',
  ].join('\n');
}

/** The retrieval section (bench/retrieval.ts) in a process of its own: its stores' memory is not this one's. */
function retrievalStep(): Promise<string> {
  log('retrieval section (bench/retrieval.ts)…');
  return sectionProcess('bench/retrieval.ts', RETRIEVAL_SECONDS);
}

/** The MCP section (bench/mcp.ts) in a process of its own, pinned as it says (its clients and server on core 1). */
function mcpStep(): Promise<string> {
  log('MCP section (bench/mcp.ts)…');
  return sectionProcess('bench/mcp.ts', MCP_SECONDS);
}

/** Runs a section's script to its end (bounded); its stdout is the section's markdown. */
function sectionProcess(script: string, seconds: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, script)],
      { cwd: ROOT, maxBuffer: 16 * 1024 * 1024, timeout: seconds * 1_000 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr.slice(-2_000)}`)) : resolve(stdout.trim()),
    );
  });
}

async function main(): Promise<number> {
  const pin = pinning();
  if (os.cpus().length < 2) loud('WARNING: fewer than 2 CPUs; the server and the load generator share a core.');
  let targets = [...TARGETS];
  const skipped: string[] = [];
  const built = S.gatewayCmd !== '' || existsSync(GATEWAY_ENTRY);
  if (!built) {
    const msg = 'dist/main.js does not exist (not built yet?): measuring only the passthrough.';
    loud(msg);
    skipped.push(msg);
    targets = targets.filter((t) => t.kind !== 'gateway');
  }
  const idle = await idleCheck();
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'llm-gateway-bench-'));
  tmpDir = tmp;
  log(`temp dir ${tmp}`);
  const upstreams = await startUpstreams(targets);
  const upstream = upstreams.get(0) as Upstream;
  const problems: string[] = [];
  const failed = (what: string) => (error: unknown) => {
    problems.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  };
  const idleRss = built
    ? ((await idleStep(upstream.origin).catch(failed('idle RSS'))) ?? { figures: 'failed' })
    : { figures: 'gateway not built' };
  const reference = await measureUpstream(upstream.origin);
  const results = await throughputRounds(targets, upstreams, tmp);
  // The cost of usage records + metrics (opt-in): only with the plain gateway among the targets.
  const cost = targets.some((t) => t.id === 'gateway')
    ? await runCostSection({ origin: upstream.origin, pid: upstream.child.pid }).catch(failed('cost section'))
    : undefined;
  for (const u of upstreams.values()) await stopChild(u.child);
  const streams = (await streamsStep(built, tmp).catch(failed('streams'))) ?? {
    figures: 'failed',
    problems: [],
    notes: [],
  };
  problems.push(...streams.problems);
  const mcp = S.mcp && built ? await mcpStep().catch(failed('mcp')) : undefined;
  const retrieval = S.retrieval ? await retrievalStep().catch(failed('retrieval')) : undefined;
  const refProblems =
    (reference.latency ? reference.latency.bad + reference.latency.errors : 0) +
    (reference.stream ? reference.stream.bad + reference.stream.errors : 0);
  problems.unshift(...results.flatMap((r) => r.problems));
  if (refProblems > 0) problems.push(`mock upstream answered ${refProblems} times with non-2xx or errors`);

  const md = renderReport({
    pin,
    idle,
    skipped,
    results,
    reference,
    cost,
    idleRss,
    streams,
    mcp,
    retrieval,
    problems,
  });
  log(`\n${md}`);
  const outDir = path.join(ROOT, 'bench/results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, 'latest.md'), md);
  log(`written to ${path.join(outDir, 'latest.md')}`);

  const bad = problems.length > 0 || results.some((r) => failureCount(r) > 0);
  if (bad || S.keepTmp) log(`temp dir kept (server logs): ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
  if (bad) loud(`BENCH FAILED: ${problems.length} problem(s), see above. Exit code 1.`);
  return bad ? 1 : 0;
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
const RETRIEVAL_SECONDS = 2_400; // the hnsw graphs of 100k chunks take ~8 minutes each to build (docs/retrieval.md)
const MCP_SECONDS = 300; // 2 × 2,200 sequential calls at ~10 ms, 2 × 6 s concurrent, start-up: ~1.5 minutes here
const perPassSec = S.warmupSeconds + S.seconds + 90;
const costSec = COST_ROUNDS * (S.pairWarmupSeconds + S.seconds + 30 * S.pairCopies + 30);
const streamsSec = S.streams > 0 ? 2 * (Math.max(60, (3 * (S.streamChunks * S.streamIntervalMs)) / 1_000) + 90) : 0;
const budgetSec =
  TARGETS.length * (ROUNDS * perPassSec + (2 * PROBE_DEADLINE_MS) / 1_000) +
  (2 * PROBE_DEADLINE_MS) / 1_000 +
  (S.idleRss ? 60 : 0) +
  costSec +
  streamsSec +
  (S.retrieval ? RETRIEVAL_SECONDS : 0) +
  (S.mcp ? MCP_SECONDS : 0) +
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
