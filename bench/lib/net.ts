// Small network helpers: a free 127.0.0.1 port and polling an URL until it answers 200.
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';

export function freePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => (port > 0 ? resolve(port) : reject(new Error('could not get a free port'))));
    });
  });
}

/**
 * Poll `url` with GET until it answers 200, at most `timeoutMs`. `stillRunning` lets the
 * caller stop early when the server process died. Returns the last problem seen on failure.
 */
export async function waitForHttp200(
  url: string,
  timeoutMs: number,
  stillRunning: () => boolean,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const deadline = Date.now() + timeoutMs;
  let reason = 'no attempt';
  while (Date.now() < deadline) {
    if (!stillRunning()) return { ok: false, reason: `process exited (last: ${reason})` };
    try {
      const res = await request(url, { method: 'GET', headersTimeout: 2_000, bodyTimeout: 2_000 });
      const text = await res.body.text();
      if (res.statusCode === 200) return { ok: true };
      reason = `HTTP ${res.statusCode}: ${text.slice(0, 200)}`;
    } catch (err) {
      reason = err instanceof Error ? err.message : String(err);
    }
    await sleep(100);
  }
  return { ok: false, reason: `timed out after ${timeoutMs} ms (last: ${reason})` };
}
