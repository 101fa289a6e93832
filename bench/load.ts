// Load generator child: one autocannon run, warm-up then the measured window over the same connections.
// Prints `WARMED` when the measured window starts and `RESULT <LoadResult JSON>` at the end, on stdout.
// Started by run.ts pinned to the load core.
//   node --import tsx bench/load.ts '<LoadConfig JSON>'
import autocannon from 'autocannon';
import { MeasuredWindow } from './lib/measured-window.js';
import { exitWithParent } from './lib/proc.js';
import type { LoadConfig, LoadResult } from './lib/throughput.js';

let keySeq = 0;

function start(cfg: LoadConfig, seconds: number): ReturnType<typeof autocannon> {
  const prefix = cfg.idempotencyKeyPrefix;
  return autocannon({
    url: cfg.url,
    method: cfg.method,
    headers: cfg.headers,
    body: cfg.body,
    // A fresh Idempotency-Key per request, so the gateway stores every answer and replays none of them.
    ...(prefix === undefined
      ? {}
      : {
          requests: [
            {
              setupRequest: (req: { headers?: Record<string, string> }) => ({
                ...req,
                headers: { ...req.headers, 'idempotency-key': `${prefix}-${(keySeq += 1)}` },
              }),
            },
          ],
        }),
    connections: cfg.connections,
    pipelining: cfg.pipelining,
    duration: seconds,
    timeout: 10,
  });
}

/**
 * One autocannon run of `warmupSeconds + seconds` over the same connections: the measured window is its tail.
 * Two runs (warm-up, then measured) would close every warm-up connection with requests in flight; each server
 * then runs its abort paths just before the measurement, and V8 deoptimised and recompiled hundreds of hot
 * functions inside the measured window (seen with --trace-deopt/--trace-opt), differently in every process.
 * With `windowStartEpochMs`/`windowEndEpochMs` the window is those wall-clock times (paired rounds: both load
 * generators measure the same interval, so neither server has the core to itself at either end).
 */
async function main(): Promise<void> {
  const raw = process.argv[2];
  if (raw === undefined) throw new Error('usage: load.ts <LoadConfig JSON>');
  const cfg = JSON.parse(raw) as LoadConfig;

  const window = new MeasuredWindow();
  const now = Date.now();
  const beginInMs = cfg.windowStartEpochMs !== undefined ? cfg.windowStartEpochMs - now : cfg.warmupSeconds * 1_000;
  const endInMs = cfg.windowEndEpochMs !== undefined ? cfg.windowEndEpochMs - now : beginInMs + cfg.seconds * 1_000;
  if (beginInMs < 0 || endInMs <= beginInMs)
    throw new Error(`the measured window is not ahead: starts in ${beginInMs} ms, ends in ${endInMs} ms`);
  // autocannon stops on its own a little after the window; the window's end is taken by the timer below.
  const instance = start(cfg, Math.ceil(endInMs / 1_000) + 1);
  void instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTimeMs: number) =>
    window.response(statusCode, responseTimeMs),
  );
  void instance.on('reqError', () => window.error());
  let cpu0 = process.cpuUsage();
  let t0 = process.hrtime.bigint();
  const warmed = setTimeout(() => {
    window.begin();
    cpu0 = process.cpuUsage();
    t0 = process.hrtime.bigint();
    process.stdout.write('WARMED\n');
  }, beginInMs);
  let measured: ReturnType<MeasuredWindow['end']> | undefined;
  let wallUs = 0;
  let cpu = { user: 0, system: 0 };
  const ended = setTimeout(() => {
    measured = window.end();
    wallUs = Number(process.hrtime.bigint() - t0) / 1e3;
    cpu = process.cpuUsage(cpu0);
    instance.stop();
  }, endInMs);
  const r = await instance;
  clearTimeout(warmed);
  clearTimeout(ended);
  measured ??= window.end();
  if (wallUs === 0) wallUs = Number(process.hrtime.bigint() - t0) / 1e3;

  const statusCodes: Record<string, number> = {};
  for (const [code, s] of Object.entries(r.statusCodeStats)) statusCodes[code] = s.count;

  const out: LoadResult = {
    requestsPerSecMean: measured.requests / (wallUs / 1e6),
    requestsPerSecStddev: measured.perSecondStddev,
    totalRequests: measured.requests,
    warmupRequests: window.warmupRequests,
    durationSec: wallUs / 1e6,
    latencyP50Ms: measured.p50,
    latencyP99Ms: measured.p99,
    non2xx: measured.non2xx,
    errors: measured.errors,
    timeouts: r.timeouts,
    statusCodes,
    warmupNon2xx: window.warmupNon2xx,
    warmupErrors: window.warmupErrors,
    cpuPercent: ((cpu.user + cpu.system) / wallUs) * 100,
  };
  process.stdout.write(`RESULT ${JSON.stringify(out)}\n`);
}

exitWithParent();
main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`load: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
