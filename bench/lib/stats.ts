// Percentiles over latency samples (milliseconds) and number formatting for the report.

export interface Percentiles {
  n: number;
  p50: number;
  p90: number;
  p99: number;
}

/** Nearest-rank percentile of an ascending-sorted array; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  const idx = Math.min(sorted.length - 1, Math.max(0, rank - 1));
  return sorted[idx] ?? Number.NaN;
}

export function summarize(samplesMs: readonly number[]): Percentiles {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
  };
}

export function nsToMs(ns: bigint): number {
  return Number(ns) / 1e6;
}

/** Milliseconds with 3 decimals, or an em dash when unknown. */
export function ms(x: number | undefined): string {
  return x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(3);
}

/** Signed difference with 3 decimals (e.g. "+0.412"), or an em dash. */
export function deltaMs(a: number | undefined, b: number | undefined): string {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b)) return '—';
  const d = a - b;
  return `${d >= 0 ? '+' : ''}${d.toFixed(3)}`;
}

export function int(x: number | undefined): string {
  return x === undefined || !Number.isFinite(x) ? '—' : Math.round(x).toLocaleString('en-US');
}

export function pct(x: number | undefined): string {
  return x === undefined || !Number.isFinite(x) ? '—' : `${x.toFixed(1)}%`;
}

/** Two-sided 95 % quantile of Student's t for 1–30 degrees of freedom (beyond: the normal's 1.96). */
const T95 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11,
  2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/**
 * Geometric mean of ratios (in %) with its 95 % interval (t on the logs): how sure a set of paired rounds is.
 * Fewer than two ratios give no interval (NaN bounds).
 */
export function geometricMeanInterval(ratiosPct: readonly number[]): { mean: number; low: number; high: number } {
  const logs = ratiosPct.map((r) => Math.log(r));
  const n = logs.length;
  const mean = logs.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { mean: Math.exp(mean), low: NaN, high: NaN };
  const sd = Math.sqrt(logs.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1));
  const half = (T95[n - 2] ?? 1.96) * (sd / Math.sqrt(n));
  return { mean: Math.exp(mean), low: Math.exp(mean - half), high: Math.exp(mean + half) };
}
