import type { Registry } from 'prom-client';

type Labels = Record<string, string>;

interface MetricValue {
  value: number;
  labels: Labels;
  metricName?: string;
}

/**
 * Counters and histograms for the request path, registered in a prom-client Registry as custom metrics: an
 * observation is a few additions on a child object the caller keeps (prom-client's own children hash their
 * label values on every call, a measurable cost to the gateway's throughput). The values are turned into
 * prom-client's sample format only when scraped.
 */
abstract class FastMetric<Child> {
  protected readonly children = new Map<string, { labels: Labels; state: Child }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'histogram',
    private readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /** The child for these label values (same order as the label names); keep it and reuse it. */
  protected childFor(values: readonly string[], make: () => Child): Child {
    const key = values.join('\u0000');
    let child = this.children.get(key);
    if (!child) {
      const labels: Labels = {};
      this.labelNames.forEach((name, i) => (labels[name] = values[i] ?? ''));
      child = { labels, state: make() };
      this.children.set(key, child);
    }
    return child.state;
  }

  /**
   * prom-client calls this when the registry is scraped. `aggregator: 'sum'`: with WORKERS > 1 the primary adds
   * every worker's samples of one series (src/observability/cluster-metrics.ts), buckets included.
   */
  async get(): Promise<{ name: string; help: string; type: string; values: MetricValue[]; aggregator: 'sum' }> {
    return { name: this.name, help: this.help, type: this.type, values: this.values(), aggregator: 'sum' };
  }

  abstract values(): MetricValue[];
}

export class FastCounter extends FastMetric<{ value: number }> {
  constructor(name: string, help: string, labelNames: readonly string[], registry: Registry) {
    super(name, help, 'counter', labelNames, registry);
  }

  labels(...values: string[]): { inc(by?: number): void } {
    const state = this.childFor(values, () => ({ value: 0 }));
    return {
      inc(by = 1) {
        state.value += by;
      },
    };
  }

  values(): MetricValue[] {
    return [...this.children.values()].map(({ labels, state }) => ({ labels, value: state.value }));
  }
}

export class FastHistogram extends FastMetric<{ counts: Float64Array; sum: number; count: number }> {
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    super(name, help, 'histogram', labelNames, registry);
  }

  labels(...values: string[]): { observe(value: number): void } {
    const buckets = this.buckets;
    const state = this.childFor(values, () => ({ counts: new Float64Array(buckets.length), sum: 0, count: 0 }));
    return {
      observe(value: number) {
        state.sum += value;
        state.count += 1;
        for (let i = 0; i < buckets.length; i++) {
          if (value <= (buckets[i] as number)) {
            state.counts[i] = (state.counts[i] as number) + 1;
            return;
          }
        }
      },
    };
  }

  values(): MetricValue[] {
    const out: MetricValue[] = [];
    for (const { labels, state } of this.children.values()) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += state.counts[i] as number;
        out.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: String(le) }, value: cumulative });
      });
      out.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: state.count });
      out.push({ metricName: `${this.name}_sum`, labels, value: state.sum });
      out.push({ metricName: `${this.name}_count`, labels, value: state.count });
    }
    return out;
  }
}

/** A counter whose values are kept elsewhere (e.g. tallies the dashboard reads too), read only when scraped. */
export class CollectedCounter {
  readonly type = 'counter';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => Array<{ labels: Labels; value: number }>,
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /** prom-client calls this when the registry is scraped. */
  async get(): Promise<{ name: string; help: string; type: string; values: MetricValue[]; aggregator: 'sum' }> {
    return { name: this.name, help: this.help, type: this.type, values: this.read(), aggregator: 'sum' };
  }
}
