// Slow mock upstream for the streams bench: OpenAI Chat Completions streams, one chunk every interval.
//   node --import tsx bench/slow-upstream.ts      env: PORT (0 = any), STREAM_CHUNKS (20), STREAM_INTERVAL_MS (500)
// Prints `LISTENING <port>` once listening on 127.0.0.1, and `STATS <json>` on SIGUSR2 (streams open, peak).
// Every stream gets its headers and role chunk on arrival, then one content chunk per tick of ONE shared timer
// (tens of thousands of open streams cost one timer, not one each), then the finish chunk, a usage chunk when the
// request asked for `stream_options.include_usage`, and `data: [DONE]`: OpenAI's wire format byte for byte.
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { exitWithParent } from './lib/proc.js';

const CHUNKS = Number(process.env.STREAM_CHUNKS ?? 20);
const INTERVAL_MS = Number(process.env.STREAM_INTERVAL_MS ?? 500);
const CREATED = 1700000000;

/** `data: <chunk>\n\n` for content piece `i` of the answer (the load generator counts `"content":"tok` pieces). */
function frame(delta: object, finish: string | null): Buffer {
  return Buffer.from(
    `data: ${JSON.stringify({ id: 'chatcmpl-slow-0001', object: 'chat.completion.chunk', created: CREATED, model: 'bench-model', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`,
  );
}
const ROLE = frame({ role: 'assistant', content: '' }, null);
const PIECE = frame({ content: 'tok ' }, null);
const FINISH = frame({}, 'stop');
const USAGE = Buffer.from(
  `data: ${JSON.stringify({ id: 'chatcmpl-slow-0001', object: 'chat.completion.chunk', created: CREATED, model: 'bench-model', choices: [], usage: { prompt_tokens: 12, completion_tokens: CHUNKS, total_tokens: 12 + CHUNKS } })}\n\n`,
);
const DONE = Buffer.from('data: [DONE]\n\n');

interface OpenStream {
  res: ServerResponse;
  sent: number;
  usage: boolean;
}

const open = new Set<OpenStream>();
let peak = 0;
let served = 0;

setInterval(() => {
  for (const stream of open) {
    if (stream.res.destroyed) {
      open.delete(stream);
      continue;
    }
    if (stream.sent < CHUNKS) {
      stream.res.write(PIECE);
      stream.sent += 1;
      continue;
    }
    stream.res.write(FINISH);
    if (stream.usage) stream.res.write(USAGE);
    stream.res.end(DONE);
    open.delete(stream);
  }
}, INTERVAL_MS);

function handle(req: IncomingMessage, res: ServerResponse, body: string): void {
  if (req.method === 'GET') {
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end('{"object":"list","data":[{"id":"bench-model","object":"model"}]}');
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(ROLE);
  served += 1;
  open.add({ res, sent: 0, usage: body.includes('"include_usage":true') });
  peak = Math.max(peak, open.size);
}

const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (part: string) => (body += part));
  req.on('end', () => handle(req, res, body));
});
server.keepAliveTimeout = 65_000;
server.maxConnections = Infinity;

exitWithParent();
process.on('SIGTERM', () => process.exit(0));
process.on('SIGUSR2', () => process.stdout.write(`STATS ${JSON.stringify({ open: open.size, peak, served })}\n`));

const port = Number(process.env.PORT ?? 0);
server.listen(Number.isInteger(port) && port >= 0 ? port : 0, '127.0.0.1', 2048, () => {
  const addr = server.address();
  if (typeof addr === 'object' && addr !== null) process.stdout.write(`LISTENING ${addr.port}\n`);
});
