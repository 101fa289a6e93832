// What the load generator counts during the measured tail of one autocannon run (bench/load.ts).

/** Latency buckets of 0.1 ms up to 60 s (the last bucket holds anything slower). */
const BUCKET_MS = 0.1;
const BUCKETS = 600_000;

export interface WindowResult {
  requests: number;
  non2xx: number;
  errors: number;
  /** Standard deviation of the per-second request counts inside the window. */
  perSecondStddev: number;
  p50: number;
  p99: number;
}

/**
 * Responses before `begin()` count as warm-up; from `begin()` to `end()` they are measured: count, non-2xx,
 * errors, requests per second and latency percentiles (0.1 ms resolution).
 */
export class MeasuredWindow {
  warmupRequests = 0;
  warmupNon2xx = 0;
  warmupErrors = 0;
  private measuring = false;
  private requests = 0;
  private non2xx = 0;
  private errors = 0;
  private readonly latency = new Uint32Array(BUCKETS);
  private perSecond: number[] = [];
  private lastSecondCount = 0;
  private ticker: NodeJS.Timeout | undefined;

  response(statusCode: number, responseTimeMs: number): void {
    const bad = statusCode < 200 || statusCode > 299;
    if (!this.measuring) {
      this.warmupRequests += 1;
      if (bad) this.warmupNon2xx += 1;
      return;
    }
    this.requests += 1;
    if (bad) this.non2xx += 1;
    const bucket = Math.min(BUCKETS - 1, Math.floor(responseTimeMs / BUCKET_MS));
    this.latency[bucket] = (this.latency[bucket] as number) + 1;
  }

  error(): void {
    if (this.measuring) this.errors += 1;
    else this.warmupErrors += 1;
  }

  begin(): void {
    this.measuring = true;
    this.ticker = setInterval(() => {
      this.perSecond.push(this.requests - this.lastSecondCount);
      this.lastSecondCount = this.requests;
    }, 1_000);
  }

  end(): WindowResult {
    this.measuring = false;
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = undefined;
    const mean = this.perSecond.reduce((a, b) => a + b, 0) / Math.max(1, this.perSecond.length);
    const variance = this.perSecond.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, this.perSecond.length);
    return {
      requests: this.requests,
      non2xx: this.non2xx,
      errors: this.errors,
      perSecondStddev: Math.sqrt(variance),
      p50: this.percentile(0.5),
      p99: this.percentile(0.99),
    };
  }

  private percentile(q: number): number {
    const target = Math.ceil(this.requests * q);
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.latency[i] as number;
      if (seen >= target && seen > 0) return Math.round((i + 1) * BUCKET_MS * 10) / 10;
    }
    return 0;
  }
}
