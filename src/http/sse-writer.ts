import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

/**
 * Writes an event stream straight to the socket: the reply's status and headers (request id, RateLimit, SSE),
 * then each string the source yields as one write, then the end. The source is pulled only when the socket has
 * room, so a slow reader stalls the upstream read (TCP backpressure) instead of growing memory.
 *
 * Why not `reply.send(Readable.from(source))`: that costs every stream a Readable, a `pipe` and two end-of-stream
 * watchers (~15 closures and listeners) for as long as it lasts; thousands of streams at once paid that in memory
 * (docs/benchmarks.md). Fastify's onResponse hooks (access line, usage, events) still run: they follow
 * the response's `finish`, which a hijacked reply emits too.
 *
 * Ending early (the socket closed, or the source failed in a way it did not answer itself) returns the source,
 * so its `finally` runs; a failure is logged and the socket is destroyed, which a client sees as a cut stream.
 */
export async function writeEventStream(reply: FastifyReply, source: AsyncGenerator<string>): Promise<void> {
  reply.hijack();
  const res = reply.raw;
  try {
    const headers = reply.getHeaders();
    for (const name in headers) {
      const value = headers[name];
      if (value !== undefined) res.setHeader(name, value);
    }
    res.writeHead(reply.statusCode);
    for await (const text of source) {
      if (res.destroyed) break; // `break` returns the source
      if (!res.write(text)) await writable(res);
    }
    if (!res.destroyed) res.end();
  } catch (error) {
    reply.log.error({ err: error }, 'event stream failed');
    res.destroy();
  }
}

/** Resolves when the socket has room again, or is gone. Allocated only for a slow reader. */
function writable(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
