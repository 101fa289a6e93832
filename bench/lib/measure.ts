// One measurement pass over one target: start it, throughput, (first round only) latency and
// streaming probes, stop it. Problems (non-2xx, errors, crashes) are collected, never hidden.
import type { ChildProcess } from 'node:child_process';
import {
  CHAT_BODY,
  CLIENT_HEADERS,
  LOAD_CORE,
  PROBE_DEADLINE_MS,
  S,
  STREAM_BODY,
  UPSTREAM_API_KEY,
  loadShapeOf,
  log,
  loud,
} from './config.js';
import type { TargetSpec } from './config.js';
import { probeLatency, probeStream } from './probe.js';
import type { ProbeTarget } from './probe.js';
import { isAlive, stopChild } from './proc.js';
import type { Reference, TargetResult } from './report.js';
import { startTarget } from './servers.js';
import type { RunningServer } from './servers.js';
import { ms } from './stats.js';
import { runThroughput } from './throughput.js';

export interface Upstream {
  child: ChildProcess;
  origin: string;
}

function probeOpts(warmup: number, count: number): { warmup: number; count: number; deadlineMs: number } {
  return { warmup, count, deadlineMs: PROBE_DEADLINE_MS };
}

/** Latency and streaming loops straight against the mock upstream: the reference for "added". */
export async function measureUpstream(origin: string): Promise<Reference> {
  const headers = { authorization: `Bearer ${UPSTREAM_API_KEY}`, 'content-type': 'application/json' };
  const target = (body: string): ProbeTarget => ({ origin, path: '/v1/chat/completions', headers, body });
  log(`\n== mock upstream, direct (reference): ${S.latencyRequests} sequential requests, ${S.streamRequests} streams`);
  const latency = await probeLatency(target(CHAT_BODY), probeOpts(S.latencyWarmup, S.latencyRequests));
  const stream = await probeStream(target(STREAM_BODY), probeOpts(S.streamWarmup, S.streamRequests));
  log(
    `   p50 ${ms(latency.latency.p50)} ms, p99 ${ms(latency.latency.p99)} ms; ` +
      `stream TTFB p50 ${ms(stream.ttfb.p50)} ms, p99 ${ms(stream.ttfb.p99)} ms`,
  );
  return { latency, stream };
}

async function throughput(
  spec: TargetSpec,
  server: RunningServer,
  upstream: Upstream,
  result: TargetResult,
): Promise<void> {
  log(
    `   throughput${spec.streamed === true ? ' (streamed calls)' : ''}: ${S.warmupSeconds}s warm-up + ${S.seconds}s, ${S.connections} connections` +
      `${S.pipelining > 1 ? `, pipelining ${S.pipelining}` : ''}`,
  );
  const shape = loadShapeOf(spec, server.chatPath);
  const run = await runThroughput(
    {
      url: `${server.origin}${shape.path}`,
      method: 'POST',
      headers: CLIENT_HEADERS,
      body: spec.streamed === true ? (shape.streamBody ?? shape.body) : shape.body,
      connections: S.connections,
      pipelining: S.pipelining,
      warmupSeconds: S.warmupSeconds,
      seconds: S.seconds,
      ...(spec.idempotencyKeys ? { idempotencyKeyPrefix: `bench-${process.pid}-${Date.now()}` } : {}),
    },
    { core: LOAD_CORE, serverPid: server.child.pid, upstreamPid: upstream.child.pid },
  );
  result.runs.push(run);
  const l = run.load;
  log(
    `   ${Math.round(l.requestsPerSecMean)} req/s (±${Math.round(l.requestsPerSecStddev)}), ${l.totalRequests} requests measured ` +
      `(${l.warmupRequests} in the warm-up), status codes of the whole run ${JSON.stringify(l.statusCodes)}, non-2xx ${l.non2xx}, errors ${l.errors} (timeouts ${l.timeouts})`,
  );
  if (l.non2xx + l.errors + l.warmupNon2xx + l.warmupErrors > 0) {
    result.problems.push(
      `${spec.name}: throughput run had non-2xx ${l.non2xx} (warm-up ${l.warmupNon2xx}), ` +
        `errors ${l.errors} (warm-up ${l.warmupErrors}), status codes ${JSON.stringify(l.statusCodes)}`,
    );
  }
}

async function probes(spec: TargetSpec, server: RunningServer, result: TargetResult): Promise<void> {
  const shape = loadShapeOf(spec, server.chatPath);
  const target = (body: string): ProbeTarget => ({
    origin: server.origin,
    path: shape.path,
    headers: CLIENT_HEADERS,
    body,
    ...(spec.api === 'responses' || spec.api === 'messages' ? { streamEnd: shape.streamEnd } : {}),
    ...(spec.idempotencyKeys ? { idempotencyKeyPrefix: `probe-${process.pid}-${Date.now()}` } : {}),
  });

  log(`   latency @1 connection: ${S.latencyWarmup} warm-up + ${S.latencyRequests} requests`);
  const lat = await probeLatency(target(shape.body), probeOpts(S.latencyWarmup, S.latencyRequests));
  result.latency = lat;
  log(`   p50 ${ms(lat.latency.p50)} ms, p90 ${ms(lat.latency.p90)} ms, p99 ${ms(lat.latency.p99)} ms`);
  if (lat.bad + lat.errors > 0 || lat.truncated) {
    result.problems.push(
      `${spec.name}: latency loop had ${lat.bad} non-2xx, ${lat.errors} errors` +
        `${lat.truncated ? ', cut short' : ''}; first: ${lat.firstProblem ?? '?'}`,
    );
  }

  if (shape.streamBody === undefined) return; // embeddings: nothing to stream
  log(`   streaming: ${S.streamWarmup} warm-up + ${S.streamRequests} streamed requests`);
  const st = await probeStream(target(shape.streamBody), probeOpts(S.streamWarmup, S.streamRequests));
  result.stream = st;
  log(
    `   TTFB p50 ${ms(st.ttfb.p50)} ms, p99 ${ms(st.ttfb.p99)} ms; ` +
      `end p50 ${ms(st.total.p50)} ms, p99 ${ms(st.total.p99)} ms`,
  );
  if (st.bad + st.errors > 0 || st.truncated) {
    result.problems.push(
      `${spec.name}: streaming loop had ${st.bad} bad answers, ${st.errors} errors` +
        `${st.truncated ? ', cut short' : ''}; first: ${st.firstProblem ?? '?'}`,
    );
  }
}

/**
 * One pass over `spec` (server started fresh, stopped at the end). The latency and streaming
 * probes run only when `withProbes`. Results and problems are added to `result`.
 */
export async function measurePass(
  spec: TargetSpec,
  upstream: Upstream,
  workDir: string,
  withProbes: boolean,
  result: TargetResult,
): Promise<void> {
  const before = result.problems.length;
  let server: RunningServer | undefined;
  try {
    server = await startTarget(spec, upstream.origin, workDir);
    log(
      `   listening on ${server.origin} (pid ${String(server.child.pid)})${server.logPath ? `, log ${server.logPath}` : ''}`,
    );
    await throughput(spec, server, upstream, result);
    if (withProbes && spec.probes !== false) await probes(spec, server, result);
    if (!isAlive(server.child)) result.problems.push(`${spec.name}: server process died during the run`);
  } catch (err) {
    result.problems.push(`${spec.name}: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    if (server !== undefined) await stopChild(server.child);
  }
  for (const p of result.problems.slice(before)) loud(p);
}
