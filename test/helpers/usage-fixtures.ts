/** Usage records for the rollup and retention tests: varied callers, models, routes, statuses and latencies. */
import type { UsageRecord } from '../../src/store/store-contract.js';

const HOUR_MS = 3_600_000;

/** The first hour the records fall in (they span four hours from it). */
export const USAGE_H0 = Date.parse('2026-11-20T10:00:00.000Z');
const H0 = USAGE_H0;

const base: UsageRecord = {
  timeMs: H0,
  requestId: 'r',
  caller: 'admin',
  environment: 'dev',
  route: 'chat',
  model: 'fast',
  upstream: 'default',
  status: 200,
  code: null,
  latencyMs: 12.5,
  ttfbMs: null,
  stream: false,
  promptTokens: 10,
  completionTokens: 5,
  costUsd: 0.0001,
  attempts: 1,
  replay: false,
  cacheHit: false,
  usageAnomaly: false,
  cacheReadTokens: 2,
  cacheWriteTokens: 1,
  reasoningTokens: 3,
  cacheSavingsUsd: 0.00001,
};

/** Varied records over four hours: callers, models (and none), routes, upstreams, statuses, latencies, null usage. */
export function variedRecords(count: number, prefix = 'v'): UsageRecord[] {
  const callers = ['admin', 'key:abc', 'key:déjà-vu', 'oauth:sub'];
  const models = ['fast', 'smart', null, 'modèle-🙂'];
  return Array.from({ length: count }, (_, i) => {
    const failed = i % 7 === 3;
    return {
      ...base,
      requestId: `${prefix}${i}`,
      timeMs: H0 + Math.floor((i * 4 * HOUR_MS) / count) + (i % 3),
      caller: callers[i % callers.length] as string,
      model: models[(i >> 1) % models.length] ?? null,
      route: i % 5 === 0 ? 'embeddings' : 'chat',
      upstream: i % 6 === 0 ? null : 'default',
      status: failed ? 502 : i % 11 === 4 ? 429 : 200,
      code: failed ? 'upstream_error' : i % 11 === 4 ? 'rate_limited' : i % 13 === 5 ? 'upstream_stream_cut' : null,
      latencyMs: 1 + ((i * 37) % 5000) / 3,
      promptTokens: failed ? null : 10 + (i % 50),
      completionTokens: failed ? null : 3 + (i % 17),
      costUsd: failed ? null : Math.round((0.00001 + (i % 29) * 0.0000731) * 1e8) / 1e8,
      cacheReadTokens: failed ? null : i % 4,
      cacheWriteTokens: failed ? null : i % 3,
      reasoningTokens: failed ? null : i % 2,
      cacheSavingsUsd: failed ? null : i % 9 === 0 ? -0.00002 : 0.00001,
    };
  });
}
