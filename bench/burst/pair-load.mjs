// One side's load of bench/burst/pair.sh: autocannon for warm-up + measured seconds on the same connections, counting the
// answers (and the non-200 ones) of the measured window, which starts at the same wall-clock time for both sides.
//   node bench/burst/pair-load.mjs <url> <warmupSecs> <secs> <plain|stream|idem> [connections] [startAtEpochMs]
import autocannon from 'autocannon';
const [url, warm, secs, mode, conns, startAt] = process.argv.slice(2);
let seq = 0;
const prefix = `k${process.pid}-${Date.now()}`;
const body = JSON.stringify({
  model: 'bench-model',
  stream: mode === 'stream',
  messages: [{ role: 'user', content: 'hi' }],
});
const t0 = Number(startAt ?? Date.now());
const from = t0 + Number(warm) * 1000,
  to = from + Number(secs) * 1000;
let n = 0,
  bad = 0;
const inst = autocannon({
  url,
  method: 'POST',
  connections: Number(conns ?? 32),
  duration: Math.ceil((to - Date.now()) / 1000) + 1,
  headers: { authorization: 'Bearer bench-admin-token', 'content-type': 'application/json' },
  body,
  ...(mode === 'idem'
    ? {
        requests: [
          { setupRequest: (r) => ({ ...r, headers: { ...r.headers, 'idempotency-key': `${prefix}-${(seq += 1)}` } }) },
        ],
      }
    : {}),
});
inst.on('response', (_c, status) => {
  const t = Date.now();
  if (t >= from && t < to) {
    n++;
    if (status !== 200) bad++;
  }
});
setTimeout(
  () => {
    console.log(JSON.stringify({ rps: n / Number(secs), bad }));
    inst.stop();
    process.exit(0);
  },
  to - Date.now() + 50,
);
