/**
 * Idle footprint (issue 33): starts `node dist/main.js` (dev defaults, SQLite in a temporary DATA_DIR, PORT=0),
 * waits until every process has started and then 3 s more, and prints each process's RSS (from /proc) and V8 heap used (from a preload that
 * writes process.memoryUsage() to a file). Run once as a single process and once with WORKERS=2.
 *   npm run build && node --import tsx bench/idle-rss.ts [command]   (default command: node dist/main.js)
 * Linux only (reads /proc). `npm run bench` measures the same (bench/lib/idle-rss.ts) with the bench's settings.
 */
import { measureIdle } from './lib/idle-rss.js';

/** How long the processes sit idle once all have started. */
const IDLE_MS = Number(process.env.IDLE_RSS_WAIT_MS ?? 3000);

const command = process.argv.length > 2 ? process.argv.slice(2) : [process.execPath, 'dist/main.js'];
console.log('| run | process | RSS | heap used |\n| --- | --- | ---: | ---: |');
for (const workers of [1, 2]) {
  for (const p of await measureIdle(workers, command, process.env, IDLE_MS)) {
    console.log(`| WORKERS=${workers} | ${p.role} | ${p.rssMb.toFixed(1)} MB | ${p.heapUsedMb.toFixed(1)} MB |`);
  }
}
