// The targets the bench knows, by id (BENCH_TARGETS, BENCH_PAIR). The passthrough is the baseline (100%).
import { fileURLToPath } from 'node:url';
import type { TargetSpec } from './config.js';

// What to measure, in this order. The passthrough is the baseline (100%).
const LIMITS_CONFIG = fileURLToPath(new URL('../configs/limits-and-idempotency.yaml', import.meta.url));
const NO_LIMITS_CONFIG = fileURLToPath(new URL('../configs/idempotency-only.yaml', import.meta.url));
/** Every chat call reported as `chat.completed` to a receiver on the mock: `/hooks/ok` answers 204, `/hooks/hang` never. */
const webhookConfig = (path: string) => (origin: string) =>
  JSON.stringify({
    webhooks: {
      allow_private_addresses: true,
      timeout_ms: 10_000,
      subscriptions: [
        {
          id: 'bench',
          url: `${origin}${path}`,
          secrets: [{ env: 'BENCH_WEBHOOK_SECRET' }],
          events: ['chat.completed'],
        },
      ],
    },
  });
const WEBHOOK_ENV = { BENCH_WEBHOOK_SECRET: 'bench-webhook-secret-0123456789' };

/** Content chunks of a stream in issue 33's "streams of 100 chunks" row. */
export const GOAL_STREAM_CHUNKS = 100;

/**
 * The default run (no BENCH_TARGETS) is issue 33's throughput rows, each gateway target right after its own
 * passthrough: non-streamed calls; a fresh Idempotency-Key per call (the load generator pays for the header on both
 * sides, so the passthrough gets it too); streams of 100 chunks. The rest are measured when named.
 */
export const ALL_TARGETS: readonly TargetSpec[] = [
  { id: 'passthrough', name: 'passthrough (floor)', kind: 'passthrough' },
  { id: 'gateway', name: 'gateway', kind: 'gateway' },
  {
    id: 'passthrough-keys',
    name: 'passthrough, a fresh Idempotency-Key per call (ignored)',
    kind: 'passthrough',
    idempotencyKeys: true,
    probes: false,
    baseline: 'passthrough-keys',
  },
  {
    id: 'gateway-keys',
    name: 'gateway, defaults, a fresh Idempotency-Key per call (SQLite)',
    kind: 'gateway',
    idempotencyKeys: true,
    probes: false,
    baseline: 'passthrough-keys',
  },
  {
    id: 'passthrough-stream100',
    name: `passthrough, streams of ${GOAL_STREAM_CHUNKS} chunks`,
    kind: 'passthrough',
    streamed: true,
    upstreamChunks: GOAL_STREAM_CHUNKS,
    probes: false,
    baseline: 'passthrough-stream100',
  },
  {
    id: 'gateway-stream100',
    name: `gateway, streams of ${GOAL_STREAM_CHUNKS} chunks`,
    kind: 'gateway',
    streamed: true,
    upstreamChunks: GOAL_STREAM_CHUNKS,
    probes: false,
    baseline: 'passthrough-stream100',
  },
  {
    id: 'responses',
    name: 'gateway, Responses API (translated to chat)',
    kind: 'gateway',
    api: 'responses',
    onlyWhenNamed: true,
  },
  { id: 'embeddings', name: 'gateway, embeddings', kind: 'gateway', api: 'embeddings', onlyWhenNamed: true },
  {
    id: 'messages',
    name: "gateway, Anthropic's Messages API (translated to chat)",
    kind: 'gateway',
    api: 'messages',
    onlyWhenNamed: true,
  },
  {
    id: 'responses-unstored',
    name: 'gateway, Responses API, responses.store: false (the translation alone)',
    kind: 'gateway',
    api: 'responses',
    configText: () => JSON.stringify({ responses: { store: false } }),
    onlyWhenNamed: true,
  },
  {
    id: 'cache-hit',
    name: 'gateway, chat answered from the response cache (SQLite), every call after the first a hit',
    kind: 'gateway',
    configText: () =>
      JSON.stringify({ cache: { enabled: true, sampled: true }, models: [{ id: 'bench-model', upstream: 'default' }] }),
    onlyWhenNamed: true,
  },
  {
    id: 'anthropic',
    name: 'gateway, Anthropic upstream (translated)',
    kind: 'gateway',
    env: { UPSTREAM_KIND: 'anthropic' },
    onlyWhenNamed: true,
  },
  {
    id: 'gemini',
    name: 'gateway, Gemini upstream (translated)',
    kind: 'gateway',
    env: { UPSTREAM_KIND: 'gemini' },
    onlyWhenNamed: true,
  },
  {
    id: 'usage-off',
    name: 'gateway, usage records off',
    kind: 'gateway',
    configText: () => JSON.stringify({ usage: { enabled: false } }),
    onlyWhenNamed: true,
  },
  {
    id: 'observability-on',
    name: 'gateway, usage records and metrics on (explicit config file)',
    kind: 'gateway',
    configText: () => JSON.stringify({ usage: { enabled: true }, metrics: { enabled: true } }),
    onlyWhenNamed: true,
  },
  {
    id: 'observability-off',
    name: 'gateway, usage records and metrics off',
    kind: 'gateway',
    configText: () => JSON.stringify({ usage: { enabled: false }, metrics: { enabled: false } }),
    onlyWhenNamed: true,
  },
  {
    id: 'webhooks-ok',
    name: 'gateway + chat.completed webhook per call (receiver answers 204)',
    kind: 'gateway',
    env: WEBHOOK_ENV,
    configText: webhookConfig('/hooks/ok'),
    onlyWhenNamed: true,
  },
  {
    id: 'webhooks-dead',
    name: 'gateway + chat.completed webhook per call (receiver never answers)',
    kind: 'gateway',
    env: WEBHOOK_ENV,
    configText: webhookConfig('/hooks/hang'),
    onlyWhenNamed: true,
  },
  {
    id: 'sqlite-state',
    name: 'gateway + limits + idempotency (SQLite)',
    kind: 'gateway',
    env: { GATEWAY_CONFIG: LIMITS_CONFIG },
    idempotencyKeys: true,
    onlyWhenNamed: true,
  },
  {
    id: 'sqlite-limits',
    name: 'gateway + limits only (SQLite)',
    kind: 'gateway',
    env: { GATEWAY_CONFIG: LIMITS_CONFIG },
    onlyWhenNamed: true,
  },
  {
    id: 'sqlite-idempotency',
    name: 'gateway + Idempotency-Key only (SQLite)',
    kind: 'gateway',
    env: { GATEWAY_CONFIG: NO_LIMITS_CONFIG },
    idempotencyKeys: true,
    onlyWhenNamed: true,
  },
  {
    id: 'redis-limits',
    name: 'gateway + limits only (Redis)',
    kind: 'gateway',
    env: { GATEWAY_CONFIG: LIMITS_CONFIG, REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
    onlyWhenNamed: true,
  },
  {
    id: 'redis-state',
    name: 'gateway + limits + idempotency (Redis)',
    kind: 'gateway',
    env: { GATEWAY_CONFIG: LIMITS_CONFIG, REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
    idempotencyKeys: true,
    onlyWhenNamed: true,
  },
];
