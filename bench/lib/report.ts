// Markdown report: the comparison table, CPU use during the throughput run, and notes.
import { deltaMs, int, ms, pct } from './stats.js';
import type { LatencyResult, StreamResult } from './probe.js';
import type { ThroughputRun } from './throughput.js';

export interface TargetResult {
  /** The target's id (bench/lib/targets.ts). */
  id: string;
  name: string;
  isBaseline: boolean;
  /** Id of the passthrough its "% of passthrough" is taken against. */
  baselineId: string;
  /** One throughput run per round. */
  runs: ThroughputRun[];
  latency?: LatencyResult;
  stream?: StreamResult;
  /** Loud problems: non-2xx, errors, crashes. Any problem makes the run exit non-zero. */
  problems: string[];
}

export interface Reference {
  latency?: LatencyResult;
  stream?: StreamResult;
}

/** The run with the median req/s (the lower middle one for an even count). */
export function medianRun(t: TargetResult): ThroughputRun | undefined {
  const sorted = [...t.runs].sort((a, b) => a.load.requestsPerSecMean - b.load.requestsPerSecMean);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** Number of non-2xx answers and errors a target produced across all steps. */
export function failureCount(t: TargetResult): number {
  return (
    t.runs.reduce((n, r) => n + r.load.non2xx + r.load.errors + r.load.warmupNon2xx + r.load.warmupErrors, 0) +
    (t.latency ? t.latency.bad + t.latency.errors : 0) +
    (t.stream ? t.stream.bad + t.stream.errors : 0)
  );
}

function row(cells: readonly string[]): string {
  return `| ${cells.join(' | ')} |`;
}

/** The median req/s of the passthrough `t` is compared with (undefined when it failed or did not run). */
function baselineRps(targets: readonly TargetResult[], t: TargetResult): number | undefined {
  const baseline = targets.find((b) => b.id === t.baselineId && b.problems.length === 0);
  return baseline ? medianRun(baseline)?.load.requestsPerSecMean : undefined;
}

export function renderComparison(targets: readonly TargetResult[], upstream: Reference, connections: number): string {
  const rounds = Math.max(0, ...targets.map((t) => t.runs.length));
  const up = upstream.latency?.latency;
  const header = [
    'target',
    rounds > 1 ? `req/s @${connections} (median of ${rounds}; min–max)` : `req/s @${connections}`,
    '% of passthrough',
    'p50 @1 (ms)',
    'p90 @1 (ms)',
    'p99 @1 (ms)',
    'added p50 (ms)',
    'added p99 (ms)',
    'stream TTFB p50',
    'stream TTFB p99',
    'stream end p50',
    'stream end p99',
    'non-2xx + errors',
  ];
  const lines = [row(header), row(header.map((_, i) => (i === 0 ? '---' : '---:')))];
  for (const t of targets) {
    const ok = t.problems.length === 0;
    const rps = medianRun(t)?.load.requestsPerSecMean;
    const all = t.runs.map((r) => r.load.requestsPerSecMean);
    const range = all.length > 1 ? ` (${int(Math.min(...all))}–${int(Math.max(...all))})` : '';
    const lat = t.latency?.latency;
    const fails = failureCount(t);
    const base = baselineRps(targets, t);
    lines.push(
      row([
        t.name,
        ok ? `${int(rps)}${range}` : rps === undefined ? 'FAILED' : `~~${int(rps)}${range}~~ invalid`,
        pct(ok && rps !== undefined && base !== undefined && base > 0 ? (rps / base) * 100 : undefined),
        ms(lat?.p50),
        ms(lat?.p90),
        ms(lat?.p99),
        deltaMs(lat?.p50, up?.p50),
        deltaMs(lat?.p99, up?.p99),
        ms(t.stream?.ttfb.p50),
        ms(t.stream?.ttfb.p99),
        ms(t.stream?.total.p50),
        ms(t.stream?.total.p99),
        ok ? String(fails) : `**FAILED** (${fails})`,
      ]),
    );
  }
  lines.push(
    row([
      'mock upstream, direct (reference)',
      '—',
      '—',
      ms(up?.p50),
      ms(up?.p90),
      ms(up?.p99),
      '—',
      '—',
      ms(upstream.stream?.ttfb.p50),
      ms(upstream.stream?.ttfb.p99),
      ms(upstream.stream?.total.p50),
      ms(upstream.stream?.total.p99),
      String(
        (upstream.latency ? upstream.latency.bad + upstream.latency.errors : 0) +
          (upstream.stream ? upstream.stream.bad + upstream.stream.errors : 0),
      ),
    ]),
  );
  return lines.join('\n');
}

/** Who was the bottleneck during the throughput run, judged from per-core CPU use. */
export function bottleneckNote(t: TargetResult, serverCore: number, loadCore: number): string | undefined {
  const run = medianRun(t);
  const server = run?.cores?.[serverCore];
  const load = run?.cores?.[loadCore];
  if (server === undefined || load === undefined) return undefined;
  const cores = `core ${serverCore} (server) ${pct(server)} busy, core ${loadCore} (autocannon + upstream) ${pct(load)}`;
  if (server >= 90 && load >= 90)
    return `${t.name}: both cores saturated (${cores}) — server-bound, but the load generator is at its limit too.`;
  if (server >= 90) return `${t.name}: server-bound (${cores}) — the number measures the server.`;
  if (load >= 90) {
    return `${t.name}: LOAD-GENERATOR-BOUND (${cores}) — req/s is only a lower bound for the server; see bench/README.md.`;
  }
  return `${t.name}: neither core saturated (${cores}) — latency-bound; try more connections.`;
}

/**
 * CPU on a core not explained by our processes (softirq is usually 5–15%): more than 20% means
 * other processes ran there during the measurement and the numbers are skewed.
 */
export function foreignLoadNote(t: TargetResult, serverCore: number, loadCore: number): string | undefined {
  const skewed: string[] = [];
  for (const [i, run] of t.runs.entries()) {
    const c0 = run.cores?.[serverCore];
    const c1 = run.cores?.[loadCore];
    if (run.serverCpu === undefined || c0 === undefined || c1 === undefined) continue;
    const other0 = c0 - run.serverCpu;
    const other1 = c1 - run.load.cpuPercent - (run.upstreamCpu ?? 0);
    if (other0 > 20 || other1 > 20) {
      skewed.push(
        `${t.runs.length > 1 ? `round ${i + 1}: ` : ''}${pct(other0)} of core ${serverCore}, ${pct(other1)} of core ${loadCore}`,
      );
    }
  }
  if (skewed.length === 0) return undefined;
  return (
    `WARNING ${t.name}: CPU used by something other than the bench processes (other jobs on the machine?) — ` +
    `${skewed.join('; ')}. Skewed result; re-run on a quiet machine or use BENCH_ROUNDS.`
  );
}

export function renderCpu(targets: readonly TargetResult[], serverCore: number, loadCore: number): string {
  const header = [
    'target',
    `core ${serverCore} busy (server)`,
    `core ${loadCore} busy (load + upstream)`,
    'server process',
    'autocannon process',
    'mock upstream process',
    'autocannon latency p50 / p99 (ms)',
  ];
  const lines = [row(header), row(header.map((_, i) => (i === 0 ? '---' : '---:')))];
  for (const t of targets) {
    const run = medianRun(t);
    lines.push(
      row([
        t.name,
        pct(run?.cores?.[serverCore]),
        pct(run?.cores?.[loadCore]),
        pct(run?.serverCpu),
        pct(run?.load.cpuPercent),
        pct(run?.upstreamCpu),
        run ? `${run.load.latencyP50Ms} / ${run.load.latencyP99Ms}` : '—',
      ]),
    );
  }
  return lines.join('\n');
}

/**
 * Round-by-round ratios: each round measures every target one after the other, so a ratio taken within a round
 * shares that round's machine conditions (this VM's speed drifts by ±15 % between rounds). The median of the
 * per-round ratios is the number to quote for "how much slower is B than A"; the medians of the table above
 * can come from different rounds.
 */
export function renderPairedRatios(targets: readonly TargetResult[], gatewayId: string): string | undefined {
  const rounds = Math.min(...targets.map((t) => t.runs.length));
  if (!Number.isFinite(rounds) || rounds < 2) return undefined;
  const lines = [row(['target', 'compared with', 'per round', 'median']), row(['---', '---', '---', '---:'])];
  const ok = (id: string) => targets.find((t) => t.id === id && t.problems.length === 0);
  for (const t of targets) {
    if (t.isBaseline || t.problems.length > 0) continue;
    // Against its own passthrough; a chat target on the shared mock also against the plain gateway.
    const references = [
      ok(t.baselineId),
      t.baselineId === 'passthrough' && t.id !== gatewayId ? ok(gatewayId) : undefined,
    ];
    for (const reference of references) {
      if (reference === undefined) continue;
      const ratios = roundRatios(t, reference).slice(0, rounds);
      lines.push(row([t.name, reference.name, ratios.map((r) => pct(r)).join(', '), `**${pct(medianOf(ratios))}**`]));
    }
  }
  return lines.length > 2 ? lines.join('\n') : undefined;
}

/** `t`'s req/s as % of `reference`'s, round by round (the rounds both have). */
export function roundRatios(t: TargetResult, reference: TargetResult): number[] {
  return t.runs
    .slice(0, reference.runs.length)
    .map((run, i) => (run.load.requestsPerSecMean / (reference.runs[i]?.load.requestsPerSecMean ?? NaN)) * 100);
}

/** The median (the mean of the two middle values for an even count); NaN when empty. */
export function medianOf(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? NaN) : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
}
