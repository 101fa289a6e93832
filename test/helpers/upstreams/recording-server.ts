/**
 * The part every provider mock shares: a real node:http server on 127.0.0.1 that reads each request whole,
 * parses a JSON body (undefined when absent or not JSON), records it, and hands it to the mock's own handler;
 * `close()` cuts open connections first so a hanging test never holds the port.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedHttpRequest {
  method: string;
  /** The request target as sent (path and query). */
  url: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown> | undefined;
  /** The body's text exactly as it arrived (for byte-for-byte checks of what a gateway forwarded). */
  text: string;
}

export interface RecordingServer {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  requests: RecordedHttpRequest[];
  close(): Promise<void>;
}

export async function startRecordingServer(
  handle: (request: RecordedHttpRequest, res: ServerResponse) => void,
): Promise<RecordingServer> {
  const requests: RecordedHttpRequest[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (part: string) => (raw += part));
    req.on('end', () => {
      let body: Record<string, unknown> | undefined;
      try {
        body = raw ? (JSON.parse(raw) as Record<string, unknown>) : undefined;
      } catch {
        body = undefined;
      }
      const recorded = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body, text: raw };
      requests.push(recorded);
      handle(recorded, res);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
