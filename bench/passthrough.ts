// The floor: a bare Node proxy doing the minimum a gateway must do per request —
// check the bearer token, read the body, forward it over a pooled keep-alive connection,
// and pipe status, content-type and body back (streams stay streamed).
//   env: PORT, UPSTREAM_URL (origin, e.g. http://127.0.0.1:1234), ADMIN_TOKEN, UPSTREAM_API_KEY
// Any GET answers 200 {"status":"ok"} so it can also stand in for the gateway's health check.
// Prints `LISTENING <port>` on stdout once listening on 127.0.0.1.
import { createServer } from 'node:http';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Pool } from 'undici';
import { exitWithParent } from './lib/proc.js';

function upstreamOrigin(): string {
  const explicit = process.env.UPSTREAM_URL;
  if (explicit !== undefined && explicit !== '') return new URL(explicit).origin;
  // Lets the passthrough be launched with the gateway's env (BENCH_GATEWAY_CMD self-test).
  const base = process.env.UPSTREAM_BASE_URL;
  if (base !== undefined && base !== '') return new URL(base).origin;
  throw new Error('UPSTREAM_URL is required');
}

const adminToken = process.env.ADMIN_TOKEN ?? '';
if (adminToken === '') throw new Error('ADMIN_TOKEN is required');
const expectedAuth = `Bearer ${adminToken}`;
const upstreamAuth = `Bearer ${process.env.UPSTREAM_API_KEY ?? ''}`;

const pool = new Pool(upstreamOrigin(), {
  connections: null, // no bound, like the gateway's default (the streams bench holds thousands at once)
  pipelining: 1,
  keepAliveTimeout: 60_000,
});

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'GET') {
    req.resume();
    send(res, 200, '{"status":"ok"}');
    return;
  }
  if (req.method !== 'POST') {
    req.resume();
    send(res, 405, '{"error":"method not allowed"}');
    return;
  }
  if (req.headers.authorization !== expectedAuth) {
    req.resume();
    send(res, 401, '{"error":"unauthorized"}');
    return;
  }
  const body = await readBody(req);
  const up = await pool.request({
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', authorization: upstreamAuth },
    body,
  });
  const headers: OutgoingHttpHeaders = {};
  const ct = up.headers['content-type'];
  if (ct !== undefined) headers['content-type'] = Array.isArray(ct) ? ct.join(', ') : ct; // @types/node 24 types it as one string
  res.writeHead(up.statusCode, headers);
  await pipeline(up.body, res);
}

const server = createServer((req, res) => {
  handle(req, res).catch((err: unknown) => {
    if (!res.headersSent) {
      send(res, 502, JSON.stringify({ error: err instanceof Error ? err.message : String(err) }));
    } else {
      res.destroy();
    }
  });
});
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;

exitWithParent();
process.on('SIGTERM', () => process.exit(0));

const port = Number(process.env.PORT ?? 0);
server.listen(Number.isInteger(port) && port >= 0 ? port : 0, '127.0.0.1', () => {
  const addr = server.address();
  if (typeof addr === 'object' && addr !== null) process.stdout.write(`LISTENING ${addr.port}\n`);
});
