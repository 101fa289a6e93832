import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import 'pino'; import 'node:cluster';
const mode = process.argv[2];
if (mode === 'thread') {
  const w = new Worker(`import { parentPort } from 'node:worker_threads'; const { loadConfig } = await import('${process.cwd()}/dist/config/load.js'); parentPort.postMessage(loadConfig(process.env));`, { eval: true });
  const c = await new Promise((r) => w.once('message', r)); await new Promise((r) => w.once('exit', r));
} else if (mode === 'inproc') {
  const { loadConfig } = await import('./dist/config/load.js'); loadConfig(process.env);
}
setTimeout(() => { const s = readFileSync('/proc/self/status','utf8'); const g = k => (Number(new RegExp(k+':\\s+(\\d+)').exec(s)[1])/1024).toFixed(1);
console.log(process.execArgv.join(' ').padEnd(20), mode.padEnd(8), 'rss', g('VmRSS'), 'anon', g('RssAnon'), 'file', g('RssFile')); }, 2500);
