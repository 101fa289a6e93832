// Settings (from BENCH_* env), fixed credentials and request bodies, and console helpers.
import { fileURLToPath } from 'node:url';

export interface TargetSpec {
  /** Short id for BENCH_TARGETS (passthrough, gateway, sqlite-state, redis-state). */
  id: string;
  name: string;
  kind: 'passthrough' | 'gateway';
  /** Extra environment for the server process (e.g. feature switches of the gateway). */
  env?: Record<string, string>;
  /** Send a fresh Idempotency-Key with every request (gateway targets). */
  idempotencyKeys?: boolean;
  /** Measured only when named in BENCH_TARGETS (breakdowns that a default run does not need). */
  onlyWhenNamed?: boolean;
  /** Command line that starts this gateway instead of BENCH_GATEWAY_CMD / dist/main.js (A/B of two builds). */
  command?: string;
  /** Cores the server process may use (taskset list, e.g. `0,1` for WORKERS=2); default the server core. */
  cores?: string;
  /** A config file written for this run (it may name the mock's address), passed as GATEWAY_CONFIG. */
  configText?: (upstreamOrigin: string) => string;
  /** The API the load calls (default chat): the Responses API or embeddings, on the gateway's own route. */
  api?: 'responses' | 'embeddings' | 'messages';
  /** The throughput load sends streamed calls (`"stream":true`): streams per second instead of calls. */
  streamed?: boolean;
  /**
   * Content chunks of every OpenAI stream of the mock upstream this target is pointed at (a second mock started
   * with STREAM_CHUNKS, see bench/mock-upstream.ts); default the shared mock's 5-piece answer.
   */
  upstreamChunks?: number;
  /** `false`: throughput only, no latency and streaming loops (targets that exist for a throughput ratio). */
  probes?: boolean;
  /** Id of the passthrough this target's "% of passthrough" is taken against (default `passthrough`). */
  baseline?: string;
}

function intEnv(name: string, dflt: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(raw)}`);
  }
  return n;
}

/** Repository root (bench/lib/../..). */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const SERVER_CORE = 0;
export const LOAD_CORE = 1;
export const ADMIN_TOKEN = 'bench-admin-token';
export const UPSTREAM_API_KEY = 'sk-bench-upstream';

export const S = {
  seconds: intEnv('BENCH_SECONDS', 10, 1, 600),
  warmupSeconds: intEnv('BENCH_WARMUP_SECONDS', 3, 0, 60),
  /**
   * Warm-up of each paired round (fresh processes every round). Long, because V8 is still compiling for many
   * seconds: with 4 s, JIT compilation was ~21 % of the gateway's CPU in the measured window on a slow host (and
   * more for the side with more code on its path); after 25 s, ~11 % and equal on both sides.
   */
  pairWarmupSeconds: intEnv('BENCH_PAIR_WARMUP_SECONDS', 20, 0, 300),
  /**
   * Processes per side in paired rounds, all on the server core at once, each with half of BENCH_CONNECTIONS:
   * one process's lasting luck (what V8 inlined, how its young generation grew) averages out within the round.
   * Same build on both sides, a scratch harness counting requests in the access logs: 96–103 % per round with
   * two per side (bench/README.md, "Paired runs").
   */
  pairCopies: intEnv('BENCH_PAIR_COPIES', 2, 1, 8),
  rounds: intEnv('BENCH_ROUNDS', 1, 1, 20),
  connections: intEnv('BENCH_CONNECTIONS', 64, 1, 4096),
  pipelining: intEnv('BENCH_PIPELINING', 1, 1, 64),
  latencyRequests: intEnv('BENCH_LATENCY_REQUESTS', 3000, 10, 1_000_000),
  latencyWarmup: intEnv('BENCH_LATENCY_WARMUP', 300, 0, 100_000),
  streamRequests: intEnv('BENCH_STREAM_REQUESTS', 500, 10, 100_000),
  streamWarmup: intEnv('BENCH_STREAM_WARMUP', 50, 0, 10_000),
  /**
   * The streams section of `npm run bench` (issue 33's fifth row): concurrent slow streams opened at once (0 skips
   * it), their chunks and spacing, and the gateway's WORKERS.
   */
  streams: intEnv('BENCH_STREAMS', 10_000, 0, 1_000_000),
  streamChunks: intEnv('BENCH_STREAM_CHUNKS', 20, 1, 10_000),
  streamIntervalMs: intEnv('BENCH_STREAM_INTERVAL_MS', 1_000, 1, 60_000),
  streamWorkers: intEnv('BENCH_STREAM_WORKERS', 2, 1, 64),
  /** The idle-RSS step (issue 33's fourth row): 0 skips it. */
  idleRss: intEnv('BENCH_IDLE_RSS', 1, 0, 1) === 1,
  /** The retrieval section (bench/retrieval.ts): BENCH_RETRIEVAL=0 leaves it out. */
  retrieval: intEnv('BENCH_RETRIEVAL', 1, 0, 1) === 1,
  /** The MCP section (bench/mcp.ts: tools/call direct vs through /mcp): BENCH_MCP=0 leaves it out. */
  mcp: intEnv('BENCH_MCP', 1, 0, 1) === 1,
  gatewayCmd: process.env.BENCH_GATEWAY_CMD?.trim() ?? '',
  keepTmp: process.env.BENCH_KEEP_TMP === '1',
};

/** Wall-clock limit of one latency or streaming loop. */
export const PROBE_DEADLINE_MS = 120_000;

const CHAT = {
  model: 'bench-model',
  messages: [{ role: 'user', content: 'Say hello to the benchmark.' }],
  max_tokens: 32,
};
export const CHAT_BODY = JSON.stringify(CHAT);
export const STREAM_BODY = JSON.stringify({ ...CHAT, stream: true });

/** The same question through the Responses API, and an embeddings call of one short text. */
const RESPONSES = { model: 'bench-model', input: 'Say hello to the benchmark.', max_output_tokens: 32 };
const EMBEDDINGS = { model: 'bench-model', input: 'Say hello to the benchmark.' };
const MESSAGES = {
  model: 'bench-model',
  max_tokens: 32,
  messages: [{ role: 'user', content: 'Say hello to the benchmark.' }],
};

/** What one target's load sends: path, JSON body, streamed body, and how a complete stream ends (none: no stream probe). */
export interface LoadShape {
  path: string;
  body: string;
  streamBody: string | undefined;
  streamEnd: string;
}

export function loadShapeOf(spec: TargetSpec, chatPath: string): LoadShape {
  if (spec.api === 'responses') {
    return {
      path: '/v1/?route=responses',
      body: JSON.stringify(RESPONSES),
      streamBody: JSON.stringify({ ...RESPONSES, stream: true }),
      streamEnd: '"type":"response.completed"',
    };
  }
  if (spec.api === 'messages') {
    return {
      path: '/v1/?route=messages',
      body: JSON.stringify(MESSAGES),
      streamBody: JSON.stringify({ ...MESSAGES, stream: true }),
      streamEnd: '"type":"message_stop"',
    };
  }
  if (spec.api === 'embeddings')
    return { path: '/v1/?route=embeddings', body: JSON.stringify(EMBEDDINGS), streamBody: undefined, streamEnd: '' };
  return { path: chatPath, body: CHAT_BODY, streamBody: STREAM_BODY, streamEnd: 'data: [DONE]\n\n' };
}
export const CLIENT_HEADERS: Record<string, string> = {
  authorization: `Bearer ${ADMIN_TOKEN}`,
  'content-type': 'application/json',
};

export function log(msg: string): void {
  process.stdout.write(`${msg}\n`);
}

/** A message nobody can miss (stderr, every line marked). */
export function loud(msg: string): void {
  process.stderr.write(`\n!!!!!!!! ${msg.replaceAll('\n', '\n!!!!!!!! ')}\n\n`);
}
