// The streams section: N concurrent slow streams through the passthrough and the gateway, in one run.
// Used by bench/streams.ts (npm run bench:streams) and by bench/run.ts (npm run bench, smaller N).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readOpenFileLimit, RESERVED_DESCRIPTORS } from '../../src/process/file-limit.js';
import { ADMIN_TOKEN, LOAD_CORE, ROOT, SERVER_CORE, log, loud } from './config.js';
import type { TargetSpec } from './config.js';
import { spawnPinned, stopChild } from './proc.js';
import { baseEnv, startMockUpstream, startTarget } from './servers.js';
import { int, percentile } from './stats.js';
import type { StreamsLoadConfig, StreamsLoadResult } from '../streams-load.js';

export interface StreamsOptions {
  streams: number;
  chunks: number;
  intervalMs: number;
  /** WORKERS for the gateway (1: pinned to the server core; more: the server may use every core). */
  workers: number;
  targets: ReadonlyArray<'passthrough' | 'gateway'>;
  /** A gateway config file (YAML or JSON) to run with, e.g. one that sets max_concurrent. */
  gatewayConfig?: string;
  /** Scratch directory for the servers' data and logs. */
  workDir: string;
  /**
   * Run the passthrough (one process) even when its descriptor limit holds fewer than `streams`: the streams past
   * it fail (EMFILE, answered 502) and count as its lost, instead of the passthrough being skipped. For a first-byte
   * reference next to the gateway where the hard limit cannot be raised (issue 33's 10,000 streams: 20,000 here).
   */
  passthroughPastLimit?: boolean;
}

export interface TargetOutcome {
  id: 'passthrough' | 'gateway';
  name: string;
  result?: StreamsLoadResult;
  idleRssMb?: number;
  peakRssMb?: number;
  processes?: number;
  skipped?: string;
  /** Run past its descriptor limit (why); its losses beyond that limit are the limit's, not its own. */
  pastLimit?: string;
}

/** RSS of a process and all its descendants, in KiB, from /proc (0 when gone). */
function treeRssKb(pid: number): { kb: number; processes: number } {
  let kb = 0;
  let processes = 0;
  const visit = (p: number) => {
    try {
      const status = readFileSync(`/proc/${p}/status`, 'utf8');
      kb += Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      processes += 1;
      for (const task of readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim().split(/\s+/).filter(Boolean))
        visit(Number(task));
    } catch {
      // gone
    }
  };
  visit(pid);
  return { kb, processes };
}

/**
 * Raise this process's open-file limit (soft and hard; children started afterwards inherit it) to `wanted` when
 * the hard limit is lower, with util-linux's `prlimit`: allowed for root (CAP_SYS_RESOURCE), as `ulimit -Hn` in a
 * root shell would. Returns what was done, or undefined when nothing was needed or it was not allowed.
 */
export function raiseFileLimit(wanted: number): string | undefined {
  const limit = readOpenFileLimit();
  if (limit === undefined || limit.hard >= wanted) return undefined;
  const r = spawnSync('prlimit', ['--pid', String(process.pid), `--nofile=${wanted}:${wanted}`], {
    stdio: 'ignore',
    timeout: 5_000,
  });
  const after = readOpenFileLimit();
  if (r.error !== undefined || r.status !== 0 || after === undefined || after.hard < wanted) return undefined;
  return `open-file limit raised from ${limit.soft} soft / ${limit.hard} hard to ${wanted} for this run (prlimit, as root)`;
}

/** Descriptors each side needs for `n` streams, and the largest `n` this machine's limit allows. */
export function descriptorPlan(
  n: number,
  workers: number,
): { hard: number; maxPassthrough: number; maxGateway: number; text: string } {
  const limit = readOpenFileLimit();
  const hard = limit ? Math.min(limit.hard, 1 << 30) : 1024;
  // Node raises each process's soft limit to the hard one; the load generator and the upstream hold one socket
  // per stream, a server two (the caller's and the upstream's), a gateway worker two per stream it holds.
  const perProcess = hard - RESERVED_DESCRIPTORS;
  const maxClients = perProcess;
  const maxPassthrough = Math.min(maxClients, Math.floor(perProcess / 2));
  const maxGateway = Math.min(maxClients, Math.floor(perProcess / 2) * workers);
  const text =
    `open-file limit ${limit ? `${limit.soft} soft / ${limit.hard} hard` : 'unknown (no /proc)'}: ` +
    `at most ${int(maxPassthrough)} streams through the passthrough (one process) and ${int(maxGateway)} through the gateway ` +
    `with WORKERS=${workers} (two descriptors per stream per server process, one in the load generator and the upstream, ${RESERVED_DESCRIPTORS} reserved each); asked for ${int(n)}`;
  return { hard, maxPassthrough, maxGateway, text };
}

async function runLoad(cfg: StreamsLoadConfig): Promise<StreamsLoadResult> {
  const child = spawnPinned({
    core: LOAD_CORE,
    cmd: process.execPath,
    args: ['--import', 'tsx', path.join(ROOT, 'bench/streams-load.ts'), JSON.stringify(cfg)],
    cwd: ROOT,
    env: { ...baseEnv(), BENCH_EXIT_WITH_PARENT: '1' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (text: string) => (out += text));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const line = out.split('\n').find((l) => l.startsWith('RESULT '));
  if (line === undefined) throw new Error(`the load generator exited with code ${String(code)} and no result`);
  return JSON.parse(line.slice('RESULT '.length)) as StreamsLoadResult;
}

async function measureTarget(
  spec: TargetSpec,
  upstreamOrigin: string,
  options: StreamsOptions,
): Promise<TargetOutcome> {
  const dir = path.join(options.workDir, `streams-${spec.id}`);
  mkdirSync(dir, { recursive: true });
  const server = await startTarget(spec, upstreamOrigin, dir);
  try {
    const pid = server.child.pid as number;
    // Let every worker finish starting before the idle reading.
    await sleep(1_500);
    const idle = treeRssKb(pid);
    let peakKb = idle.kb;
    let processes = idle.processes;
    const sampler = setInterval(() => {
      const now = treeRssKb(pid);
      if (now.kb > peakKb) peakKb = now.kb;
      processes = Math.max(processes, now.processes);
    }, 200);
    log(
      `   ${spec.name}: ${int(options.streams)} streams at once (${options.chunks} chunks, ${options.intervalMs} ms apart); idle RSS ${(idle.kb / 1024).toFixed(0)} MB`,
    );
    try {
      const result = await runLoad({
        url: `${server.origin}${server.chatPath}`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'bench-model', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
        streams: options.streams,
        chunks: options.chunks,
        // Generous: a stream takes chunks × interval; what is slower than three times that is lost.
        timeoutMs: Math.max(60_000, 3 * options.chunks * options.intervalMs),
      });
      const id = spec.kind === 'passthrough' ? 'passthrough' : 'gateway';
      return { id, name: spec.name, result, idleRssMb: idle.kb / 1024, peakRssMb: peakKb / 1024, processes };
    } finally {
      clearInterval(sampler);
    }
  } finally {
    await stopChild(server.child, 10_000);
  }
}

function renderStreams(outcomes: TargetOutcome[], options: StreamsOptions, plan: string, wallNote: string): string {
  const rows = outcomes.map((o) => {
    if (o.skipped !== undefined || o.result === undefined)
      return `| ${o.name} | – | – | – | – | – | – | – | SKIPPED: ${o.skipped ?? 'no result'} |`;
    const r = o.result;
    const fb = r.firstByteMs;
    const perStreamKb =
      o.peakRssMb !== undefined && o.idleRssMb !== undefined
        ? ((o.peakRssMb - o.idleRssMb) * 1024) / options.streams
        : undefined;
    const lost =
      r.lost === 0
        ? '0'
        : `**${int(r.lost)}** (${Object.entries(r.reasons)
            .map(([k, v]) => `${int(v)} × ${k}`)
            .join(', ')})`;
    return (
      `| ${o.name}${o.pastLimit !== undefined ? ', run past its descriptor limit (the streams past it fail)' : ''} | ${int(r.completed)} | ${lost} | ${fb.length > 0 ? percentile(fb, 50).toFixed(0) : '–'} | ${fb.length > 0 ? percentile(fb, 99).toFixed(0) : '–'} | ` +
      `${(r.wallMs / 1000).toFixed(1)} | ${o.idleRssMb?.toFixed(0) ?? '–'} (${o.processes ?? '?'} proc.) | ${o.peakRssMb?.toFixed(0) ?? '–'} | ${perStreamKb?.toFixed(1) ?? '–'} |`
    );
  });
  return [
    `${int(options.streams)} concurrent streams, all opened at once; each ${options.chunks} content chunks ${options.intervalMs} ms apart from a slow mock upstream (bench/slow-upstream.ts), read to the end by one load generator (bench/streams-load.ts). Gateway: WORKERS=${options.workers}${options.gatewayConfig ? `, config ${options.gatewayConfig}` : ', default settings'}; ${options.workers > 1 ? 'server processes on every core' : `server on core ${SERVER_CORE}`}, upstream and load generator on core ${LOAD_CORE}.`,
    '',
    `- ${plan}`,
    `- lost = not 200, or without the final \`data: [DONE]\`, or fewer content chunks than sent. ${wallNote}`,
    '',
    '| target | completed | lost | first byte p50 (ms) | first byte p99 (ms) | wall (s) | idle RSS (MB) | peak RSS, all processes (MB) | per stream (KB) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n');
}

/** Runs the section; `failed` when any stream was lost. */
export async function runStreamsSection(
  options: StreamsOptions,
): Promise<{ markdown: string; failed: boolean; outcomes: TargetOutcome[] }> {
  // The passthrough, one process, holds two descriptors per stream.
  const raised = raiseFileLimit(2 * options.streams + RESERVED_DESCRIPTORS);
  if (raised !== undefined) log(`\n== streams: ${raised}`);
  const plan = descriptorPlan(options.streams, options.workers);
  log(`\n== streams: ${plan.text}`);
  const outcomes: TargetOutcome[] = [];
  const upstream = await startMockUpstream('bench/slow-upstream.ts', {
    STREAM_CHUNKS: String(options.chunks),
    STREAM_INTERVAL_MS: String(options.intervalMs),
  });
  try {
    for (const target of options.targets) {
      if (target === 'passthrough') {
        const spec: TargetSpec = { id: 'passthrough', name: 'passthrough (floor)', kind: 'passthrough' };
        if (options.streams > plan.maxPassthrough) {
          const why = `${int(options.streams)} streams need more descriptors than one process has (at most ${int(plan.maxPassthrough)})`;
          if (options.passthroughPastLimit === true) {
            loud(`streams: passthrough run anyway: ${why}; the streams past it fail (EMFILE) and count as lost`);
            outcomes.push({ ...(await measureTarget(spec, upstream.origin, options)), pastLimit: why });
            continue;
          }
          loud(`streams: passthrough skipped: ${why}`);
          outcomes.push({ id: target, name: spec.name, skipped: why });
          continue;
        }
        outcomes.push(await measureTarget(spec, upstream.origin, options));
        continue;
      }
      const config = options.gatewayConfig;
      const spec: TargetSpec = {
        id: 'gateway',
        name: `gateway (WORKERS=${options.workers})`,
        kind: 'gateway',
        env: { WORKERS: String(options.workers) },
        ...(options.workers > 1
          ? { cores: Array.from({ length: Math.min(options.workers, os.cpus().length) }, (_, i) => i).join(',') }
          : {}),
        ...(config
          ? { configText: (origin: string) => readFileSync(config, 'utf8').replaceAll('${UPSTREAM_ORIGIN}', origin) }
          : {}),
      };
      if (options.streams > plan.maxGateway) {
        const why = `${int(options.streams)} streams need more descriptors than WORKERS=${options.workers} have (at most ${int(plan.maxGateway)}); raise the hard limit or the workers`;
        loud(`streams: gateway skipped: ${why}`);
        outcomes.push({ id: target, name: spec.name, skipped: why });
        continue;
      }
      outcomes.push(await measureTarget(spec, upstream.origin, options));
    }
  } finally {
    await stopChild(upstream.child);
  }
  const ideal = (options.chunks * options.intervalMs) / 1000;
  const markdown = renderStreams(
    outcomes,
    options,
    raised !== undefined ? `${raised}; ${plan.text}` : plan.text,
    `A stream alone takes ~${ideal.toFixed(0)} s (${options.chunks} × ${options.intervalMs} ms); wall is the whole run, first call sent to last stream ended.`,
  );
  const failed = outcomes.some((o) => o.result !== undefined && o.result.lost > 0);
  return { markdown, failed, outcomes };
}
