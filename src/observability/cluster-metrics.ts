import cluster, { type Worker } from 'node:cluster';
import type { Registry } from 'prom-client';
import type { Logger } from './logger.js';

/**
 * One `/metrics` scrape for the whole instance when WORKERS > 1. A scrape lands on one worker (node:cluster
 * hands out connections round-robin), which alone knows only its own counters. So that worker asks the primary,
 * the primary asks every listening worker for its samples (prom-client's JSON form, FastCounter / FastHistogram
 * included), adds them up with prom-client's AggregatorRegistry.aggregate (each metric's `aggregator`: `sum` for
 * counters and histograms, `max` for the gauges) and sends the text back.
 *
 * prom-client's own cluster messaging (`clusterMetrics()`) is not used: it runs in the primary only, asks every
 * connected worker, including one that is still starting and has no registry yet (the scrape then fails after
 * 5 s), and serves only the global registry.
 */

const SCRAPE = 'llmgw:metrics-scrape';
const SCRAPED = 'llmgw:metrics-scraped';
const COLLECT = 'llmgw:metrics-collect';
const COLLECTED = 'llmgw:metrics-collected';
/** How long a scrape waits for the workers (Prometheus' default scrape timeout is 10 s). */
const CLUSTER_SCRAPE_TIMEOUT_MS = 5_000;

interface Message {
  type?: unknown;
  id?: unknown;
  text?: unknown;
  error?: unknown;
  metrics?: unknown;
}

const isMessage = (value: unknown): value is Message => typeof value === 'object' && value !== null;

/** Primary side: answers scrapes from workers with the sum over `workers()` (those that are listening). */
export function serveClusterMetrics(logger: Logger, workers: () => Worker[]): void {
  let nextId = 0;
  const pending = new Map<number, { waiting: Set<number>; samples: object[]; done: () => void }>();

  cluster.on('message', (worker, message: unknown) => {
    if (!isMessage(message)) return;
    if (message.type === COLLECTED && typeof message.id === 'number') {
      const collect = pending.get(message.id);
      if (collect?.waiting.delete(worker.id)) {
        if (Array.isArray(message.metrics)) collect.samples.push(message.metrics);
        if (collect.waiting.size === 0) collect.done();
      }
      return;
    }
    if (message.type !== SCRAPE) return;
    const answer = (reply: { text: string } | { error: string }) => {
      if (worker.isConnected()) worker.send({ type: SCRAPED, id: message.id, ...reply });
    };
    const id = nextId++;
    const targets = workers().filter((w) => w.isConnected());
    const samples: object[] = [];
    const waiting = new Set(targets.map((w) => w.id));
    const timer = setTimeout(
      () => finish(`no answer from worker(s) ${[...waiting].join(', ')} within ${CLUSTER_SCRAPE_TIMEOUT_MS} ms`),
      CLUSTER_SCRAPE_TIMEOUT_MS,
    );
    const finish = (error?: string) => {
      if (!pending.delete(id)) return;
      clearTimeout(timer);
      if (error !== undefined) {
        logger.warn({ error }, 'metrics scrape failed');
        answer({ error });
        return;
      }
      // prom-client is loaded at the first scrape, not at start: the primary never uses it otherwise
      // (a part of its idle footprint).
      import('prom-client')
        .then(({ AggregatorRegistry }) => AggregatorRegistry.aggregate(samples).metrics())
        .then((text) => answer({ text }))
        .catch((err: unknown) => answer({ error: (err as Error).message }));
    };
    pending.set(id, { waiting, samples, done: () => finish() });
    for (const target of targets) target.send({ type: COLLECT, id });
    if (waiting.size === 0) finish();
  });

  // A worker that dies mid-scrape takes its counters with it (as a restarted single process would): answer
  // with the others instead of waiting for the timeout.
  cluster.on('exit', (worker) => {
    for (const collect of pending.values())
      if (collect.waiting.delete(worker.id) && collect.waiting.size === 0) collect.done();
  });
}

/** Worker side: hands this worker's samples to the primary when it collects. */
export function answerClusterCollects(registry: Registry): void {
  process.on('message', (message: unknown) => {
    if (!isMessage(message) || message.type !== COLLECT) return;
    registry
      .getMetricsAsJSON()
      .then((metrics) => process.send?.({ type: COLLECTED, id: message.id, metrics }))
      .catch(() => process.send?.({ type: COLLECTED, id: message.id, metrics: [] }));
  });
}

let nextScrape = 0;

/** Worker side: the whole instance's metrics text, from the primary. Rejects when the primary cannot answer. */
export function scrapeCluster(): Promise<string> {
  const id = nextScrape++;
  return new Promise<string>((resolve, reject) => {
    const onMessage = (message: unknown) => {
      if (!isMessage(message) || message.type !== SCRAPED || message.id !== id) return;
      settle();
      if (typeof message.text === 'string') resolve(message.text);
      else reject(new Error(`cluster metrics: ${String(message.error)}`));
    };
    const timer = setTimeout(() => {
      settle();
      reject(new Error('cluster metrics: the primary did not answer'));
    }, CLUSTER_SCRAPE_TIMEOUT_MS + 1_000);
    const settle = () => {
      clearTimeout(timer);
      process.off('message', onMessage);
    };
    if (!process.send || !process.connected) {
      settle();
      reject(new Error('cluster metrics: no channel to the primary'));
      return;
    }
    process.on('message', onMessage);
    process.send({ type: SCRAPE, id });
  });
}
