// N concurrent slow streams through the passthrough and the gateway, side by side in one run.
//   npm run bench:streams -- --streams 4000 [--chunks 20] [--interval 500] [--workers 2] [--targets gateway]
//                            [--config bench/configs/streams-bounded.yaml]
// Environment: BENCH_STREAMS, BENCH_STREAM_CHUNKS, BENCH_STREAM_INTERVAL_MS, BENCH_STREAM_WORKERS,
// BENCH_STREAM_TARGETS, BENCH_STREAM_CONFIG; BENCH_GATEWAY_CMD as for npm run bench. See bench/README.md.
// Exit code 1 when any stream was lost.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, log, loud } from './lib/config.js';
import { killAllSync } from './lib/proc.js';
import { runStreamsSection } from './lib/streams.js';

function positive(name: string, raw: string | undefined, dflt: number, max: number): number {
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new Error(`${name} must be a whole number from 1 to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      streams: { type: 'string' },
      chunks: { type: 'string' },
      interval: { type: 'string' },
      workers: { type: 'string' },
      targets: { type: 'string' },
      config: { type: 'string' },
    },
  });
  const env = process.env;
  const targets = (values.targets ?? env.BENCH_STREAM_TARGETS ?? 'passthrough,gateway').split(',').filter(Boolean);
  for (const t of targets)
    if (t !== 'passthrough' && t !== 'gateway') throw new Error(`--targets: passthrough and/or gateway, got ${t}`);
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'llm-gateway-streams-'));
  const options = {
    streams: positive('--streams', values.streams ?? env.BENCH_STREAMS, 4_000, 1_000_000),
    chunks: positive('--chunks', values.chunks ?? env.BENCH_STREAM_CHUNKS, 20, 10_000),
    intervalMs: positive('--interval', values.interval ?? env.BENCH_STREAM_INTERVAL_MS, 500, 60_000),
    workers: positive('--workers', values.workers ?? env.BENCH_STREAM_WORKERS, 1, 64),
    targets: targets as Array<'passthrough' | 'gateway'>,
    ...((values.config ?? env.BENCH_STREAM_CONFIG)
      ? { gatewayConfig: path.resolve(values.config ?? env.BENCH_STREAM_CONFIG ?? '') }
      : {}),
    workDir,
  };
  const { markdown, failed } = await runStreamsSection(options);
  const md = [
    '# Streams benchmark',
    '',
    `- date: ${new Date().toISOString()}`,
    `- node: ${process.version}`,
    `- cpu: ${os.cpus()[0]?.model ?? 'unknown'} × ${os.cpus().length}`,
    `- load average at start: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
    '',
    markdown,
    '',
  ].join('\n');
  log(`\n${md}`);
  const outDir = path.join(ROOT, 'bench/results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, 'streams-latest.md'), md);
  if (failed) loud(`STREAMS LOST: see the table (server logs kept in ${workDir}). Exit code 1.`);
  else rmSync(workDir, { recursive: true, force: true });
  return failed ? 1 : 0;
}

process.on('exit', killAllSync);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    killAllSync();
    process.exit(130);
  });
}
main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    loud(`bench:streams: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    killAllSync();
    process.exit(1);
  },
);
