// Sequential probes over one keep-alive connection (undici Client): request latency and
// streaming time-to-first-byte. Bounded by request count and by a wall-clock deadline.
import { Client } from 'undici';
import { nsToMs, summarize } from './stats.js';
import type { Percentiles } from './stats.js';

export interface ProbeTarget {
  origin: string;
  path: string;
  headers: Record<string, string>;
  /** When set, every request gets a fresh `Idempotency-Key` with this prefix (so nothing is a replay). */
  idempotencyKeyPrefix?: string;
  body: string;
  /** What a complete stream's text ends with (default `data: [DONE]`; the Responses API's final event's data). */
  streamEnd?: string;
}

export interface ProbeOptions {
  warmup: number;
  count: number;
  /** Wall-clock limit for warm-up + measurement together. */
  deadlineMs: number;
}

export interface ProbeFailures {
  /** Non-2xx answers (or invalid stream bodies). */
  bad: number;
  /** Transport errors / timeouts. */
  errors: number;
  /** First failure seen, for the log. */
  firstProblem?: string;
  /** True when the deadline or the error budget cut the loop short. */
  truncated: boolean;
}

export interface LatencyResult extends ProbeFailures {
  latency: Percentiles;
}

export interface StreamResult extends ProbeFailures {
  ttfb: Percentiles;
  total: Percentiles;
}

const MAX_ERRORS = 20;

function newClient(origin: string): Client {
  return new Client(origin, {
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** `count` sequential requests after `warmup`; each timed from send to body fully read. */
export async function probeLatency(t: ProbeTarget, o: ProbeOptions): Promise<LatencyResult> {
  const client = newClient(t.origin);
  const deadline = Date.now() + o.deadlineMs;
  const samples: number[] = [];
  const f: ProbeFailures = { bad: 0, errors: 0, truncated: false };
  try {
    for (let i = 0; i < o.warmup + o.count; i++) {
      if (Date.now() > deadline || f.errors >= MAX_ERRORS) {
        f.truncated = true;
        break;
      }
      try {
        const t0 = process.hrtime.bigint();
        const res = await client.request({ method: 'POST', path: t.path, headers: withKey(t), body: t.body });
        const text = await res.body.text();
        const t1 = process.hrtime.bigint();
        if (res.statusCode < 200 || res.statusCode > 299) {
          f.bad++;
          f.firstProblem ??= `HTTP ${res.statusCode}: ${text.slice(0, 300)}`;
        } else if (i >= o.warmup) {
          samples.push(nsToMs(t1 - t0));
        }
      } catch (err) {
        f.errors++;
        f.firstProblem ??= describe(err);
      }
    }
  } finally {
    await client.close().catch(() => undefined);
  }
  return { ...f, latency: summarize(samples) };
}

const DONE = 'data: [DONE]\n\n';

/** Streamed requests: time to the first body chunk and to the end; the body must end with [DONE]. */
export async function probeStream(t: ProbeTarget, o: ProbeOptions): Promise<StreamResult> {
  const client = newClient(t.origin);
  const deadline = Date.now() + o.deadlineMs;
  const ttfb: number[] = [];
  const total: number[] = [];
  const f: ProbeFailures = { bad: 0, errors: 0, truncated: false };
  try {
    for (let i = 0; i < o.warmup + o.count; i++) {
      if (Date.now() > deadline || f.errors >= MAX_ERRORS) {
        f.truncated = true;
        break;
      }
      try {
        const t0 = process.hrtime.bigint();
        const res = await client.request({ method: 'POST', path: t.path, headers: withKey(t), body: t.body });
        let first: bigint | undefined;
        const chunks: Buffer[] = [];
        for await (const chunk of res.body) {
          first ??= process.hrtime.bigint();
          chunks.push(chunk as Buffer);
        }
        const t1 = process.hrtime.bigint();
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode < 200 || res.statusCode > 299) {
          f.bad++;
          f.firstProblem ??= `HTTP ${res.statusCode}: ${text.slice(0, 300)}`;
        } else if (
          !(t.streamEnd === undefined
            ? text.endsWith(DONE)
            : text.lastIndexOf(t.streamEnd) > text.lastIndexOf('\n\nevent: '))
        ) {
          f.bad++;
          f.firstProblem ??= `stream did not end with ${JSON.stringify(t.streamEnd ?? DONE)}: ${JSON.stringify(text.slice(-200))}`;
        } else if (i >= o.warmup && first !== undefined) {
          ttfb.push(nsToMs(first - t0));
          total.push(nsToMs(t1 - t0));
        }
      } catch (err) {
        f.errors++;
        f.firstProblem ??= describe(err);
      }
    }
  } finally {
    await client.close().catch(() => undefined);
  }
  return { ...f, ttfb: summarize(ttfb), total: summarize(total) };
}

let keySeq = 0;
function withKey(t: ProbeTarget): Record<string, string> {
  if (t.idempotencyKeyPrefix === undefined) return t.headers;
  keySeq += 1;
  return { ...t.headers, 'idempotency-key': `${t.idempotencyKeyPrefix}-${keySeq}` };
}
