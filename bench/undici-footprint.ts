/**
 * What loading undici's Pool from its dispatcher modules (src/net/undici.ts) saves against its public index:
 * a fresh `node` process loads undici one way or the other, then opens N keep-alive connections through one Pool
 * (connections unbounded, as the gateway's) to a node:http server in this process, which holds every answer until
 * all N requests have arrived so that the Pool needs N sockets. The child prints RSS (/proc) and V8 heap used
 * (after a GC) three times: bare, with undici loaded, with the N connections open and idle.
 *   node --expose-gc --import tsx bench/undici-footprint.ts [N=2000] [runs=3]
 * Linux only (reads /proc). Runs the two variants alternately.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const N = Number(process.argv[2] ?? 2000);
const RUNS = Number(process.argv[3] ?? 3);

/** The child's code (CommonJS, plain node: no tsx in the measured process). */
const CHILD = `
const { readFileSync } = require('node:fs');
const rss = () => Number(/VmRSS:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
const sample = () => { globalThis.gc(); return { rss: rss(), heap: process.memoryUsage().heapUsed / 1048576 }; };
const settle = () => new Promise((r) => setTimeout(r, 300));
(async () => {
  await settle();
  const bare = sample();
  let Pool;
  if (process.env.VARIANT === 'index') ({ Pool } = require('undici'));
  else {
    const Dispatcher = require('undici/lib/dispatcher/dispatcher.js');
    Object.assign(Dispatcher.prototype, require('undici/lib/api/index.js'));
    Pool = require('undici/lib/dispatcher/pool.js');
  }
  await settle();
  const loaded = sample();
  const pool = new Pool(process.env.ORIGIN, { connections: null, keepAliveTimeout: 60000 });
  const n = Number(process.env.N);
  await Promise.all(Array.from({ length: n }, () => pool.request({ method: 'GET', path: '/' }).then((r) => r.body.text())));
  await settle();
  const open = sample();
  const modules = Object.keys(require.cache).filter((k) => k.includes('/node_modules/undici/')).length;
  process.stdout.write(JSON.stringify({ bare, loaded, open, modules, sockets: pool.stats.connected }));
  await pool.close();
})();
`;

interface Sample {
  rss: number;
  heap: number;
}
interface Result {
  bare: Sample;
  loaded: Sample;
  open: Sample;
  modules: number;
  sockets: number;
}

async function runOnce(variant: string): Promise<Result> {
  let waiting: ServerResponse[] = [];
  const server = createServer((_req: IncomingMessage, res: ServerResponse) => {
    waiting.push(res);
    if (waiting.length < N) return;
    for (const r of waiting) r.end('ok');
    waiting = [];
  });
  server.keepAliveTimeout = 60_000;
  server.maxConnections = N + 10;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const child = spawn(process.execPath, ['--expose-gc', '-e', CHILD], {
    env: { ...process.env, VARIANT: variant, ORIGIN: origin, N: String(N), NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await new Promise((resolve) => child.on('exit', resolve));
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  return JSON.parse(out) as Result;
}

const mb = (x: number) => x.toFixed(1);
console.log(`N=${N} connections, ${RUNS} runs per variant, alternated`);
console.log(
  '| variant | undici modules | bare RSS | + undici RSS / heap | + N connections RSS / heap | KB per connection (RSS / heap) |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
for (let run = 0; run < RUNS; run++) {
  for (const variant of ['index', 'dispatchers']) {
    const r = await runOnce(variant);
    const perRss = ((r.open.rss - r.loaded.rss) * 1024) / r.sockets;
    const perHeap = ((r.open.heap - r.loaded.heap) * 1024) / r.sockets;
    console.log(
      `| ${variant} | ${r.modules} | ${mb(r.bare.rss)} MB | ${mb(r.loaded.rss)} / ${mb(r.loaded.heap)} MB | ` +
        `${mb(r.open.rss)} / ${mb(r.open.heap)} MB (${r.sockets} sockets) | ${perRss.toFixed(1)} / ${perHeap.toFixed(1)} |`,
    );
  }
}
