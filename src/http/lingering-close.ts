import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Socket } from 'node:net';

/**
 * The most of a refused request's body read (and thrown away) after its answer, and for how long, before the
 * connection is closed anyway: what a caller can make the gateway read for nothing is bounded.
 */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
export const LINGER_MAX_MS = 5_000;

type LingeringSocket = Socket & { destroySoon: () => void };

/** Sockets already lingering (an answer is refused once; a second call changes nothing). */
const lingering = new WeakSet<Socket>();

/**
 * A "lingering close", as nginx does it (`lingering_close`, `lingering_time`): an answer sent before the request's
 * body was read (a 401, 404, 409, 413...) carries `connection: close`, and Node then ends the connection at once
 * (`socket.destroySoon()` once the answer is written). Closing a socket whose peer is still sending makes the
 * kernel answer with a reset, and a client still writing its body (the `openai` SDK's fetch uploading a part) gets
 * `write EPIPE` before it reads the answer sitting in its buffer: a network error instead of the gateway's 409.
 * RFC 9112 section 9.6 asks a server closing a connection to half-close first and keep reading until the peer
 * has seen the answer. So: the answer is written and the write side closed (FIN) as before, then the rest of the
 * body is read and discarded, and the socket is destroyed once the body has ended, after `LINGER_MAX_BYTES`, or
 * after `LINGER_MAX_MS`, whichever comes first. Whatever was reading the body (a multipart parser) is detached.
 *
 * Only for a real HTTP/1 socket: `app.inject` (light-my-request) has none, and its request must be left as it is.
 */
export function lingerUntilBodyRead(raw: IncomingMessage): void {
  const socket = raw.socket as LingeringSocket | null;
  if (!(socket instanceof Socket) || raw.httpVersionMajor !== 1 || typeof socket.destroySoon !== 'function') return;
  if (raw.complete || raw.destroyed || socket.destroyed || lingering.has(socket)) return;
  lingering.add(socket);
  const destroySoon = socket.destroySoon;
  let answered = false;
  let bytes = 0;
  const close = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  const timer = setTimeout(close, LINGER_MAX_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  // Called by Node once the `connection: close` answer is written: the write side ends, the read side stays.
  socket.destroySoon = function lingeringClose() {
    answered = true;
    if (raw.complete) return destroySoon.call(socket);
    socket.end();
  };
  raw.unpipe();
  raw.on('error', () => undefined); // a caller resetting the connection now is expected, not a fault
  raw.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > LINGER_MAX_BYTES) close();
  });
  raw.once('end', () => {
    // The whole body arrived: nothing is left unread, so closing now sends a FIN, not a reset.
    clearTimeout(timer);
    socket.destroySoon = destroySoon;
    if (answered) destroySoon.call(socket);
  });
  raw.resume();
}

/**
 * A connection whose answer said `connection: close` carries no further request: while it lingers, Node's parser
 * still reads what follows the refused body, and a request sent after it (pipelined, or written once the answer
 * arrived) would be dispatched and run (a key created, a call charged) with its answer never written. Every
 * request on a lingering socket is dropped here, before the router sees it; the socket closes as the lingering
 * close says (its body ended, or the bound). Wraps the server's one `request` listener (Fastify's handler).
 */
export function dropRequestsAfterRefusal(server: Server): void {
  const handlers = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', function requestUnlessLingering(req: IncomingMessage, res: ServerResponse) {
    if (isLingering(req.socket)) {
      // Its bytes are read and thrown away (counted by nobody): the lingering close's own bounds still end it.
      req.resume();
      return;
    }
    for (const handler of handlers) handler.call(server, req, res);
  });
}

/** Whether this socket's request was refused before its body was read (its close lingers). */
export function isLingering(socket: Socket | null): boolean {
  return socket !== null && lingering.has(socket);
}
