// Load generator child: a warm-up run, then the measured autocannon run. Prints `WARMED`
// when the measured run starts and `RESULT <LoadResult JSON>` at the end, on stdout.
// Started by run.ts pinned to the load core.
//   node --import tsx bench/load.ts '<LoadConfig JSON>'
import autocannon from 'autocannon';
import type { Result } from 'autocannon';
import { exitWithParent } from './lib/proc.js';
import type { LoadConfig, LoadResult } from './lib/throughput.js';

let keySeq = 0;

function run(cfg: LoadConfig, seconds: number): Promise<Result> {
  const prefix = cfg.idempotencyKeyPrefix;
  return autocannon({
    url: cfg.url,
    method: cfg.method,
    headers: cfg.headers,
    body: cfg.body,
    // A fresh Idempotency-Key per request, so the gateway stores every answer and replays none of them.
    ...(prefix === undefined
      ? {}
      : { requests: [{ setupRequest: (req: { headers?: Record<string, string> }) => ({ ...req, headers: { ...req.headers, 'idempotency-key': `${prefix}-${(keySeq += 1)}` } }) }] }),
    connections: cfg.connections,
    pipelining: cfg.pipelining,
    duration: seconds,
    timeout: 10,
    ...(cfg.workers > 0 ? { workers: cfg.workers } : {}),
  });
}

async function main(): Promise<void> {
  const raw = process.argv[2];
  if (raw === undefined) throw new Error('usage: load.ts <LoadConfig JSON>');
  const cfg = JSON.parse(raw) as LoadConfig;

  const warm = cfg.warmupSeconds > 0 ? await run(cfg, cfg.warmupSeconds) : undefined;

  process.stdout.write('WARMED\n');
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const r = await run(cfg, cfg.seconds);
  const wallUs = Number(process.hrtime.bigint() - t0) / 1e3;
  const cpu = process.cpuUsage(cpu0);

  const statusCodes: Record<string, number> = {};
  for (const [code, s] of Object.entries(r.statusCodeStats)) statusCodes[code] = s.count;

  const out: LoadResult = {
    requestsPerSecMean: r.requests.mean,
    requestsPerSecStddev: r.requests.stddev,
    totalRequests: r.requests.total,
    durationSec: r.duration,
    latencyP50Ms: r.latency.p50,
    latencyP99Ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes,
    warmupNon2xx: warm?.non2xx ?? 0,
    warmupErrors: warm?.errors ?? 0,
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
