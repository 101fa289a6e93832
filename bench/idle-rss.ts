/**
 * Idle footprint (issue 33): starts `node dist/main.js` (dev defaults, SQLite in a temporary DATA_DIR, PORT=0),
 * waits until it is idle, and prints each process's RSS (from /proc) and V8 heap used (from a preload that
 * writes process.memoryUsage() to a file). Run once as a single process and once with WORKERS=2.
 *   npm run build && node --import tsx bench/idle-rss.ts [command]   (default command: node dist/main.js)
 * Linux only (reads /proc).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const IDLE_MS = Number(process.env.IDLE_RSS_WAIT_MS ?? 4000);

const PRELOAD = `import { writeFileSync } from 'node:fs';
import cluster from 'node:cluster';
setTimeout(() => {
  const m = process.memoryUsage();
  const role = cluster.isPrimary ? (process.env.WORKERS === '2' ? 'primary' : 'single') : 'worker';
  writeFileSync(process.env.IDLE_RSS_DIR + '/' + process.pid + '.json', JSON.stringify({ role, rss: m.rss, heapUsed: m.heapUsed }));
}, ${IDLE_MS - 1000}).unref();
`;

async function measure(workers: number, command: string[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'idle-rss-'));
  const preload = join(dir, 'preload.mjs');
  writeFileSync(preload, PRELOAD);
  const out = join(dir, 'out');
  mkdirSync(out);
  const child = spawn(command[0]!, ['--import', preload, ...command.slice(1)], {
    env: { ...process.env, DATA_DIR: join(dir, 'data'), PORT: '0', WORKERS: String(workers), IDLE_RSS_DIR: out },
    stdio: 'ignore',
  });
  // Each process writes its figures IDLE_MS - 1 s after its own start (workers start later than the primary).
  const expected = workers > 1 ? workers + 1 : 1;
  for (let waited = 0; readdirSync(out).length < expected && waited < 20_000; waited += 250) await sleep(250);
  await sleep(1000);
  for (const file of readdirSync(out)) {
    const pid = Number(file.replace('.json', ''));
    const figures = JSON.parse(readFileSync(join(out, file), 'utf8')) as { role: string; heapUsed: number };
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    console.log(
      `| WORKERS=${workers} | ${figures.role} | ${(rssKb / 1024).toFixed(1)} MB | ${(figures.heapUsed / 2 ** 20).toFixed(1)} MB |`,
    );
  }
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  rmSync(dir, { force: true, recursive: true });
}

const command = process.argv.length > 2 ? process.argv.slice(2) : [process.execPath, 'dist/main.js'];
console.log('| run | process | RSS | heap used |\n| --- | --- | ---: | ---: |');
await measure(1, command);
await measure(2, command);
