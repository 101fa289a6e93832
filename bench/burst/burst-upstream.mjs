import { createServer } from 'node:http';
const N = Number(process.env.CHUNKS ?? 100);
const frames = [];
for (let i = 0; i < N; i++) frames.push(Buffer.from(`data: ${JSON.stringify({ id: 'chatcmpl-bench-0001', object: 'chat.completion.chunk', created: 1700000000, model: 'bench-model', system_fingerprint: 'fp_bench', choices: [{ index: 0, delta: i === 0 ? { role: 'assistant', content: 'tok' } : { content: ' tok' }, logprobs: null, finish_reason: i === N - 1 ? 'stop' : null }] })}\n\n`));
const usage = Buffer.from(`data: ${JSON.stringify({ id: 'chatcmpl-bench-0001', object: 'chat.completion.chunk', created: 1700000000, model: 'bench-model', choices: [], usage: { prompt_tokens: 12, completion_tokens: N, total_tokens: 12 + N } })}\n\n`);
const done = Buffer.from('data: [DONE]\n\n');
const split = process.env.SPLIT === '1';
createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    if (req.url.endsWith('/models')) { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"object":"list","data":[]}'); return; }
    const wantsUsage = body.includes('"include_usage":true');
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (split) {
      let i = 0;
      const tick = () => { for (let k = 0; k < 10 && i < N; k++, i++) res.write(frames[i]); if (i < N) setImmediate(tick); else { if (wantsUsage) res.write(usage); res.end(done); } };
      tick();
    } else {
      for (const f of frames) res.write(f);
      if (wantsUsage) res.write(usage);
      res.end(done);
    }
  });
}).listen(Number(process.env.PORT ?? 9901), '127.0.0.1');
