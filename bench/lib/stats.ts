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
