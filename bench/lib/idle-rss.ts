// Idle footprint (issue 33's fourth row): start a gateway, wait until it is idle, read each process's RSS (/proc)
// and V8 heap used (a preload writes process.memoryUsage() to a file). Used by bench/idle-rss.ts and bench/run.ts.
// Linux only (reads /proc).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface IdleProcess {
  role: 'single' | 'primary' | 'worker';
  pid: number;
  rssMb: number;
  heapUsedMb: number;
}

// Every process of the gateway (the primary and each worker inherit the preload) rewrites its figures every 500 ms.
const PRELOAD = `import { writeFileSync } from 'node:fs';
import cluster from 'node:cluster';
const write = () => {
  const m = process.memoryUsage();
  const role = cluster.isPrimary ? ((process.env.WORKERS ?? '1') !== '1' ? 'primary' : 'single') : 'worker';
  writeFileSync(process.env.IDLE_RSS_DIR + '/' + process.pid + '.json', JSON.stringify({ role, rss: m.rss, heapUsed: m.heapUsed }));
};
setInterval(write, 500).unref();
`;

/**
 * Start `command` (node and its arguments; a preload is put in front of them) with `WORKERS=workers`, PORT=0 and
 * a temporary DATA_DIR over `env`; once every process (one, or the primary and each worker) has started (at most
 * `startMs`), wait `idleMs` and read each one's RSS. The processes are stopped before it returns; the answer lists
 * the primary (or single process) first. On a busy machine the start takes seconds, so the wait counts from it.
 */
export async function measureIdle(
  workers: number,
  command: readonly string[],
  env: NodeJS.ProcessEnv,
  idleMs = 3_000,
  startMs = 30_000,
): Promise<IdleProcess[]> {
  const dir = mkdtempSync(join(tmpdir(), 'idle-rss-'));
  const preloadPath = join(dir, 'preload.mjs');
  writeFileSync(preloadPath, PRELOAD);
  const out = join(dir, 'out');
  mkdirSync(out);
  const child = spawn(command[0] ?? process.execPath, ['--import', preloadPath, ...command.slice(1)], {
    env: { ...env, DATA_DIR: join(dir, 'data'), PORT: '0', WORKERS: String(workers), IDLE_RSS_DIR: out },
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    const expected = workers === 1 ? 1 : workers + 1;
    const deadline = Date.now() + startMs;
    while (readdirSync(out).length < expected && Date.now() < deadline && child.exitCode === null) await sleep(100);
    await sleep(idleMs);
    const found: IdleProcess[] = [];
    for (const file of readdirSync(out)) {
      const pid = Number(file.replace('.json', ''));
      const figures = JSON.parse(readFileSync(join(out, file), 'utf8')) as {
        role: IdleProcess['role'];
        heapUsed: number;
      };
      let rssKb = 0;
      try {
        rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      } catch {
        continue; // gone: not idle, not counted
      }
      found.push({ role: figures.role, pid, rssMb: rssKb / 1024, heapUsedMb: figures.heapUsed / 2 ** 20 });
    }
    return found.sort((a, b) => (a.role === 'worker' ? 1 : 0) - (b.role === 'worker' ? 1 : 0) || a.pid - b.pid);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { force: true, recursive: true });
  }
}
