// Issue 33's five goals as one table at the end of `npm run bench`: the figure, the passthrough's and the gateway's
// value from this run, their ratio, the goal, and whether it is met.
import type { IdleProcess } from './idle-rss.js';
import { medianOf, roundRatios } from './report.js';
import type { TargetResult } from './report.js';
import { int } from './stats.js';
import type { StreamsOptions, TargetOutcome } from './streams.js';
import { percentile } from './stats.js';
import { GOAL_STREAM_CHUNKS } from './targets.js';

export interface GoalInputs {
  results: readonly TargetResult[];
  connections: number;
  /** Idle processes with one worker and with two; a string says why the step did not run. */
  idle: { single: IdleProcess[]; two: IdleProcess[] } | string;
  /** The streams section's outcomes; a string says why it did not run. */
  streams: { outcomes: readonly TargetOutcome[]; options: StreamsOptions } | string;
}

type Met = 'yes' | '**no**' | '–';
const met = (ok: boolean | undefined): Met => (ok === undefined ? '–' : ok ? 'yes' : '**no**');
const row = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
const notMeasured = (figure: string, why: string, goal: string) => row([figure, '–', '–', '–', goal, `– (${why})`]);

/** "median (min–max)" of a target's throughput rounds. */
function rate(t: TargetResult): string {
  const all = t.runs.map((r) => r.load.requestsPerSecMean);
  const median = medianOf(all);
  return all.length > 1 ? `${int(median)} (${int(Math.min(...all))}–${int(Math.max(...all))})` : int(median);
}

/** A throughput row: the gateway's rate as a share of its passthrough's, the median of the same-round ratios. */
function throughputRow(inputs: GoalInputs, figure: string, ids: [string, string], goal: number): string {
  const goalText = `≥ ${goal.toFixed(2)}`;
  const [floor, gateway] = ids.map((id) => inputs.results.find((r) => r.id === id));
  if (floor === undefined || gateway === undefined) return notMeasured(figure, 'not among BENCH_TARGETS', goalText);
  const failed = [floor, gateway].filter((t) => t.problems.length > 0 || t.runs.length === 0);
  if (failed.length > 0) return notMeasured(figure, `${failed.map((t) => t.name).join(', ')} failed`, goalText);
  const ratios = roundRatios(gateway, floor).map((r) => r / 100);
  const ratio = medianOf(ratios);
  const perRound = ratios.length > 1 ? ` (rounds ${ratios.map((r) => r.toFixed(2)).join(', ')})` : '';
  return row([figure, rate(floor), rate(gateway), `**${ratio.toFixed(2)}**${perRound}`, goalText, met(ratio >= goal)]);
}

const MB = (x: number) => `${x.toFixed(0)} MB`;

function idleRow(inputs: GoalInputs): string {
  const figure = 'idle RSS: one process; `WORKERS=2`: the primary, each worker';
  const goal = '≤ 50 MB the primary, ≤ 70 MB a worker';
  if (typeof inputs.idle === 'string') return notMeasured(figure, inputs.idle, goal);
  const single = inputs.idle.single.find((p) => p.role === 'single');
  const primary = inputs.idle.two.find((p) => p.role === 'primary');
  const workers = inputs.idle.two.filter((p) => p.role === 'worker');
  if (single === undefined || primary === undefined || workers.length !== 2)
    return notMeasured(figure, `processes found: ${inputs.idle.single.length} and ${inputs.idle.two.length}`, goal);
  const gateway = `${MB(single.rssMb)}; ${MB(primary.rssMb)}, ${workers.map((w) => MB(w.rssMb)).join(' / ')}`;
  const ok = primary.rssMb <= 50 && workers.every((w) => w.rssMb <= 70);
  return row([figure, '–', gateway, '–', goal, met(ok)]);
}

function streamsCell(o: TargetOutcome | undefined, n: number): string {
  if (o === undefined) return '–';
  if (o.result === undefined) return `skipped: ${o.skipped ?? 'no result'}`;
  const past = o.pastLimit !== undefined ? ' (run past its descriptor limit: see the streams table)' : '';
  const r = o.result;
  const s = (q: number) => (r.firstByteMs.length > 0 ? (percentile(r.firstByteMs, q) / 1000).toFixed(1) : '–');
  const lost =
    r.lost === 0
      ? ''
      : ` (**${int(r.lost)} lost**: ${Object.entries(r.reasons)
          .map(([k, v]) => `${int(v)} × ${k}`)
          .join(', ')})`;
  return `${int(r.completed)} of ${int(n)}${lost}${past}; first byte p50 ${s(50)} s / p99 ${s(99)} s; peak ${MB(o.peakRssMb ?? NaN)}`;
}

function streamsRow(inputs: GoalInputs): string {
  const goal = '≤ 900 MB peak, 0 lost, first byte p99 ≤ 1.5× the passthrough’s';
  if (typeof inputs.streams === 'string')
    return notMeasured('10,000 streams opened at once, `WORKERS=2`', inputs.streams, goal);
  const { outcomes, options } = inputs.streams;
  const figure = `${int(options.streams)} streams opened at once (${options.chunks} chunks ${options.intervalMs} ms apart), gateway \`WORKERS=${options.workers}\`: completed, first byte, peak RSS of all processes`;
  const floor = outcomes.find((o) => o.id === 'passthrough');
  const gateway = outcomes.find((o) => o.id === 'gateway');
  const p99 = (o: TargetOutcome | undefined) =>
    o?.result && o.result.firstByteMs.length > 0 ? percentile(o.result.firstByteMs, 99) : undefined;
  const [fp, gp] = [p99(floor), p99(gateway)];
  const ratio = fp !== undefined && gp !== undefined ? gp / fp : undefined;
  const g = gateway?.result;
  let ok: boolean | undefined;
  if (g !== undefined) {
    const memoryAndLoss = (gateway?.peakRssMb ?? Infinity) <= 900 && g.lost === 0;
    ok = !memoryAndLoss ? false : ratio === undefined ? undefined : ratio <= 1.5;
  }
  const ratioText = ratio === undefined ? '–' : `first byte p99 **${ratio.toFixed(2)}×**`;
  return row([
    figure,
    streamsCell(floor, options.streams),
    streamsCell(gateway, options.streams),
    ratioText,
    goal,
    met(ok),
  ]);
}

/** The "Issue 33 goals" section: five rows, figure | passthrough | gateway | ratio | goal | met?. */
export function renderGoals(inputs: GoalInputs): string {
  const c = inputs.connections;
  return [
    '## Issue 33 goals',
    '',
    'Rows 1–3: req/s (or streams/s) at ' +
      `${c} connections, the median of the rounds (min–max); the ratio is the median of the gateway-to-passthrough ` +
      'ratios within each round (the two measured one after the other). Row 4: RSS from /proc, 3 s after every process of the gateway started (no call made). ' +
      'Row 5: see "Concurrent slow streams" above.',
    '',
    row(['figure', 'passthrough', 'gateway', 'ratio', 'goal', 'met?']),
    row(['---', '---:', '---:', '---:', '---', '---']),
    throughputRow(inputs, `non-streamed calls (req/s @${c})`, ['passthrough', 'gateway'], 0.75),
    throughputRow(
      inputs,
      `streams of ${GOAL_STREAM_CHUNKS} chunks (streams/s @${c})`,
      ['passthrough-stream100', 'gateway-stream100'],
      0.65,
    ),
    throughputRow(
      inputs,
      `non-streamed, a fresh Idempotency-Key per call, default store SQLite (req/s @${c})`,
      ['passthrough-keys', 'gateway-keys'],
      0.55,
    ),
    idleRow(inputs),
    streamsRow(inputs),
  ].join('\n');
}
