import v8 from 'node:v8';
import { readFileSync } from 'node:fs';
v8.setFlagsFromString(process.env.FLAGS ?? '');
const what = process.argv.slice(2);
for (const w of what) await import(w);
setTimeout(() => { const s = readFileSync('/proc/self/status','utf8'); const g = k => (Number(new RegExp(k+':\\s+(\\d+)').exec(s)[1])/1024).toFixed(1);
console.log((process.env.FLAGS||'-').padEnd(50), (what.join('+') || 'bare').padEnd(30), 'rss', g('VmRSS'), 'anon', g('RssAnon'), 'file', g('RssFile')); }, 1500);
