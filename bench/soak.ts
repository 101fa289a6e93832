// Soak: minutes of mixed load through the real gateway with every embedded-store feature on (limits, idempotency,
// usage records), then SIGTERM. Passes only if the gateway answered throughout, exited 0 on its own (no abort:
// ADR 0005, better-sqlite3 12 on Node 24 died of SIGABRT from its statement finaliser under normal use), and the
// store holds one usage record per request. Prints a minute-by-minute table and a summary (docs/benchmarks.md).
//   npm run bench:soak                                          (build, then 300 s on the project's Node 26)
//   BENCH_SOAK_SECONDS=60 node --import tsx bench/soak.ts       (no build; the Node running it runs the gateway)
//   PATH=<node 24>/bin:$PATH node --import tsx bench/soak.ts    (the soak on Node 24)
import { closeSync, fstatSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { DatabaseSync } from 'node:sqlite';
import { Pool } from 'undici';
import { ADMIN_TOKEN, CHAT_BODY, CLIENT_HEADERS, LOAD_CORE, STREAM_BODY, log, loud } from './lib/config.js';
import { cpuPercent, sampleCpu } from './lib/cpu.js';
import { hasTaskset, killAllSync, pinSelf, stopChild } from './lib/proc.js';
import { startMockUpstream, startTarget } from './lib/servers.js';

function intEnv(name: string, dflt: number): number {
  const n = Number(process.env[name] ?? dflt);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
  return n;
}
const SECONDS = intEnv('BENCH_SOAK_SECONDS', 300);
const CONNECTIONS = intEnv('BENCH_SOAK_CONNECTIONS', 32);
const REPORT_EVERY_S = Math.min(60, SECONDS);

// Every limit kind on, high enough never to refuse, plus one model with a tight limit: it refuses often (429), so
// refusals, not only admissions, go through the store.
const CONFIG = `limits:
  caller:
    requests: { limit: 100000000, window_seconds: 60 }
    tokens: { limit: 1000000000, window_seconds: 60 }
    concurrent: 10000
  models:
    tight-model: { requests: { limit: 50, window_seconds: 1 } }
  upstreams:
    default:
      requests: { limit: 100000000, window_seconds: 60 }
idempotency:
  ttl_seconds: 120
`;

/** The request mix, per 20 requests: what each one is. */
type Kind = 'plain' | 'keyed' | 'replay' | 'stream' | 'keyed-stream' | 'limited';
const MIX: readonly Kind[] = [
  ...Array<Kind>(7).fill('plain'),
  ...Array<Kind>(4).fill('keyed'),
  ...Array<Kind>(2).fill('replay'),
  ...Array<Kind>(2).fill('stream'),
  'keyed-stream',
  ...Array<Kind>(4).fill('limited'),
];
const LIMITED_BODY = JSON.stringify({ ...(JSON.parse(CHAT_BODY) as object), model: 'tight-model' });

interface Window {
  requests: number;
  byStatus: Map<number, number>;
  errors: number;
}
const newWindow = (): Window => ({ requests: 0, byStatus: new Map(), errors: 0 });

/** The last `bytes` of a file: the server log grows by ~250 bytes per request (hundreds of MB in a soak). */
function tailOf(file: string, bytes = 256 * 1024): string {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    const buffer = Buffer.alloc(Math.min(bytes, size));
    readSync(fd, buffer, 0, buffer.length, size - buffer.length);
    return buffer.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Math.round(Number(line?.split(/\s+/)[1] ?? 0) / 1024);
}

async function main(): Promise<void> {
  if (!hasTaskset() || !pinSelf(LOAD_CORE)) loud('WARNING: taskset not available: nothing is pinned.');
  const work = mkdtempSync(path.join(tmpdir(), 'gw-soak-'));
  const configPath = path.join(work, 'soak.yaml');
  writeFileSync(configPath, CONFIG);
  const upstream = await startMockUpstream();
  let failed = false;
  try {
    const gateway = await startTarget(
      { id: 'soak', name: 'gateway (soak)', kind: 'gateway', env: { GATEWAY_CONFIG: configPath } },
      upstream.origin,
      work,
    );
    const pid = gateway.child.pid ?? 0;
    // The start line says which Node runs it (pino writes it within a second, before any load).
    let startLine: string | undefined;
    for (let i = 0; i < 30 && startLine === undefined; i++) {
      startLine = readFileSync(gateway.logPath ?? '', 'utf8')
        .split('\n')
        .find((l) => l.includes('"gateway started"'));
      if (startLine === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const node = (JSON.parse(startLine ?? '{}') as { node?: string }).node ?? '(not logged)';
    log(
      `== soak: ${SECONDS} s of mixed load, ${CONNECTIONS} connections, gateway pid ${pid} on Node ${node} (pinned to core 0), load avg ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
    );
    log(
      `   mix per 20 requests: ${[...new Set(MIX)].map((k) => `${MIX.filter((m) => m === k).length} ${k}`).join(', ')}`,
    );
    const pool = new Pool(gateway.origin, { connections: CONNECTIONS, pipelining: 1 });
    const deadline = Date.now() + SECONDS * 1000;
    const total = newWindow();
    let window = newWindow();
    const recentKeys: string[] = [];
    let sequence = 0;
    let keyed = 0;

    const send = async (kind: Kind): Promise<void> => {
      const n = sequence++;
      const headers: Record<string, string> = { ...CLIENT_HEADERS };
      let body = CHAT_BODY;
      if (kind === 'stream' || kind === 'keyed-stream') body = STREAM_BODY;
      if (kind === 'limited') body = LIMITED_BODY;
      if (kind === 'keyed' || kind === 'keyed-stream') {
        const key = `soak-${process.pid}-${keyed++}`;
        headers['idempotency-key'] = key;
        if (kind === 'keyed') {
          recentKeys.push(key);
          if (recentKeys.length > 1_000) recentKeys.shift();
        }
      }
      if (kind === 'replay') {
        const key = recentKeys[n % Math.max(1, recentKeys.length)];
        if (key !== undefined) headers['idempotency-key'] = key;
      }
      try {
        const res = await pool.request({
          method: 'POST',
          path: '/v1/chat/completions',
          headers,
          body,
          headersTimeout: 30_000,
          bodyTimeout: 30_000,
        });
        await res.body.text();
        for (const w of [window, total]) w.byStatus.set(res.statusCode, (w.byStatus.get(res.statusCode) ?? 0) + 1);
      } catch {
        window.errors += 1;
        total.errors += 1;
      }
      window.requests += 1;
      total.requests += 1;
    };

    const loop = async (worker: number): Promise<void> => {
      for (let i = worker; Date.now() < deadline; i += CONNECTIONS) await send(MIX[i % MIX.length] ?? 'plain');
    };
    // Operators' reads beside the load: health and metrics, as a monitoring system would poll them.
    const polls = setInterval(() => {
      void pool.request({ method: 'GET', path: '/v1/?route=health' }).then(
        (r) => r.body.text(),
        () => undefined,
      );
      void pool.request({ method: 'GET', path: '/metrics', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then(
        (r) => r.body.text(),
        () => undefined,
      );
    }, 2_000);

    const rows: string[] = [
      '| at (s) | req/s | 2xx | 409 | 429 | other | errors | gateway RSS MB | gateway CPU % |',
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ];
    const started = Date.now();
    let cpuBefore = sampleCpu(pid);
    let lastReport = started;
    const reporter = setInterval(() => {
      const now = Date.now();
      const cpu = sampleCpu(pid);
      const w = window;
      window = newWindow();
      const count = (from: number, to: number) =>
        [...w.byStatus].filter(([s]) => s >= from && s < to).reduce((a, [, c]) => a + c, 0);
      const other = w.requests - w.errors - count(200, 300) - (w.byStatus.get(409) ?? 0) - (w.byStatus.get(429) ?? 0);
      const row = `| ${Math.round((now - started) / 1000)} | ${Math.round(w.requests / ((now - lastReport) / 1000))} | ${count(200, 300)} | ${w.byStatus.get(409) ?? 0} | ${w.byStatus.get(429) ?? 0} | ${other} | ${w.errors} | ${rssMb(pid)} | ${Math.round(cpuPercent(cpuBefore, cpu) ?? 0)} |`;
      rows.push(row);
      log(row);
      cpuBefore = cpu;
      lastReport = now;
    }, REPORT_EVERY_S * 1000);
    log(rows.join('\n'));
    await Promise.all(Array.from({ length: CONNECTIONS }, (_, w) => loop(w)));
    clearInterval(reporter);
    clearInterval(polls);
    await pool.close();
    const aliveAtEnd = gateway.child.exitCode === null && gateway.child.signalCode === null;
    const rssAtEnd = aliveAtEnd ? rssMb(pid) : 0;

    // A graceful stop: it drains, flushes the usage records and closes the store. Exit 0, no signal, or it failed.
    const exited = once(gateway.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    gateway.child.kill('SIGTERM');
    const [code, signal] =
      gateway.child.exitCode !== null || gateway.child.signalCode !== null
        ? [gateway.child.exitCode, gateway.child.signalCode]
        : await exited;
    // A fatal error or an abort is the last thing the process writes (stdout and stderr share the file).
    const serverLog = tailOf(gateway.logPath ?? '');
    const db = new DatabaseSync(path.join(work, 'data', 'gateway.db'), { readOnly: true });
    const count = (sql: string) => Number((db.prepare(sql).get() as { n: number }).n);
    const usageRows = count("SELECT COUNT(*) AS n FROM usage_records WHERE route = 'chat'");
    const keys = count('SELECT COUNT(*) AS n FROM idempotency_keys');
    const integrity = String(Object.values(db.prepare('PRAGMA integrity_check').get() ?? {})[0]);
    db.close();
    const chatAnswers = [...total.byStatus.values()].reduce((a, b) => a + b, 0);
    const other = [...total.byStatus].filter(([s]) => !(s >= 200 && s < 300) && s !== 409 && s !== 429);

    log('');
    log(
      '| Node | seconds | requests | req/s | 2xx | 409 (key in progress) | 429 (tight-model) | other | errors | usage records (chat) | idempotency keys | RSS at end MB | exit | integrity |',
    );
    log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |');
    const twoXx = [...total.byStatus].filter(([s]) => s >= 200 && s < 300).reduce((a, [, c]) => a + c, 0);
    log(
      `| ${node} | ${SECONDS} | ${total.requests} | ${Math.round(total.requests / SECONDS)} | ${twoXx} | ${total.byStatus.get(409) ?? 0} | ${total.byStatus.get(429) ?? 0} | ${other.map(([s, c]) => `${s}: ${c}`).join(', ') || 0} | ${total.errors} | ${usageRows} | ${keys} | ${rssAtEnd} | ${signal ?? code} | ${integrity} |`,
    );
    const problems = [
      !aliveAtEnd && 'the gateway died during the soak',
      (code !== 0 || signal !== null) && `the gateway exited with ${signal ?? `code ${String(code)}`} after SIGTERM`,
      /Assertion failed|SIGABRT|FATAL ERROR/.test(serverLog) && 'the gateway log has an assertion or fatal error',
      total.errors > 0 && `${total.errors} requests failed at the socket`,
      other.length > 0 && `unexpected statuses: ${other.map(([s, c]) => `${s} x${c}`).join(', ')}`,
      (total.byStatus.get(429) ?? 0) === 0 && 'no request was refused: the limits were not exercised',
      usageRows !== chatAnswers && `${usageRows} usage records for ${chatAnswers} answered chat requests`,
      integrity !== 'ok' && `integrity_check: ${integrity}`,
    ].filter((p): p is string => typeof p === 'string');
    if (problems.length > 0) {
      failed = true;
      loud(
        `SOAK FAILED:\n${problems.join('\n')}\n--- last lines of ${gateway.logPath ?? ''} ---\n${serverLog.split('\n').slice(-20).join('\n')}`,
      );
    } else {
      log(
        '\nsoak passed: the gateway answered throughout, exited 0 after SIGTERM, one usage record per answered chat request, the file is intact',
      );
    }
  } finally {
    await stopChild(upstream.child);
    if (!failed) rmSync(work, { recursive: true, force: true });
    else log(`(kept ${work})`);
  }
  process.exitCode = failed ? 1 : 0;
}

process.on('SIGINT', () => {
  killAllSync();
  process.exit(130);
});
main().catch((error: unknown) => {
  loud(`SOAK FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  killAllSync();
  process.exit(1);
});
