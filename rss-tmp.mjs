import { readFileSync } from 'node:fs';
const what = process.argv.slice(2);
for (const w of what) await import(w);
setTimeout(() => { const lines = readFileSync('/proc/self/smaps','utf8').split('\n'); const by = new Map(); let cur='';
for (const l of lines) { const m = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$/.exec(l); if (m) { cur = (m[2]||'[anon]') + ' ' + m[1]; continue; } const r = /^Rss:\s+(\d+)/.exec(l); if (r) by.set(cur, (by.get(cur)||0)+Number(r[1])); }
console.log(what.join('+')||'bare'); for (const [k,v] of [...by].sort((a,b)=>b[1]-a[1]).slice(0,8)) console.log('  ', (v/1024).toFixed(1), k); }, 1500);
