// A transparent HTTP relay between the client and the gateway that notes each exchange: method, path, status, the
// X-Gateway-Dropped-Fields header, and the body of an error answer. A client shows the user only part of an error
// (Claude Code prints the message, not `details`), and the gateway logs no details of a 4xx: the relay is how a
// refused cell can name the field. Bodies and streams pass through untouched, as they come. When recording
// (`npm run conformance -- --record`), it also keeps every request as the client sent it, in the order they came.
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Exchange {
  method: string;
  url: string;
  status: number;
  droppedFields: string | undefined;
  /** The answer's body when its status is 400 or more (at most 64 kB). */
  errorBody: string | undefined;
}

/** A request as the client sent it (kept only when the tap records). */
export interface SentRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** The body's text; undefined when it was over RECORD_BODY_LIMIT. */
  body: string | undefined;
}

export interface Tap {
  origin: string;
  exchanges: Exchange[];
  sent: SentRequest[];
  close(): Promise<void>;
}

const ERROR_BODY_LIMIT = 64 * 1024;
/** The clients' requests are tens of kB; a larger one is passed on but not kept. */
const RECORD_BODY_LIMIT = 16 * 1024 * 1024;

function keep(req: IncomingMessage, sent: SentRequest[]): void {
  const request: SentRequest = {
    method: req.method ?? '',
    url: req.url ?? '',
    headers: { ...req.headers },
    body: undefined,
  };
  sent.push(request);
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= RECORD_BODY_LIMIT) chunks.push(chunk);
  });
  req.on('end', () => {
    if (size <= RECORD_BODY_LIMIT) request.body = Buffer.concat(chunks).toString('utf8');
  });
}

function relay(req: IncomingMessage, res: ServerResponse, target: URL, exchanges: Exchange[]): void {
  const upstream = httpRequest(
    {
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, host: target.host },
    },
    (answer) => {
      const status = answer.statusCode ?? 502;
      const dropped = answer.headers['x-gateway-dropped-fields'];
      const exchange: Exchange = {
        method: req.method ?? '',
        url: req.url ?? '',
        status,
        droppedFields: typeof dropped === 'string' ? dropped : undefined,
        errorBody: undefined,
      };
      exchanges.push(exchange);
      res.writeHead(status, answer.headers);
      if (status >= 400) {
        exchange.errorBody = '';
        answer.on('data', (chunk: Buffer) => {
          if ((exchange.errorBody?.length ?? 0) < ERROR_BODY_LIMIT) exchange.errorBody += chunk.toString('utf8');
        });
      }
      answer.pipe(res);
    },
  );
  upstream.on('error', (error) => {
    exchanges.push({
      method: req.method ?? '',
      url: req.url ?? '',
      status: 0,
      droppedFields: undefined,
      errorBody: `relay: ${error.message}`,
    });
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end();
  });
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

export async function startTap(targetOrigin: string, options: { record?: boolean } = {}): Promise<Tap> {
  const target = new URL(targetOrigin);
  const exchanges: Exchange[] = [];
  const sent: SentRequest[] = [];
  const server = createServer((req, res) => {
    if (options.record === true) keep(req, sent);
    relay(req, res, target, exchanges);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    exchanges,
    sent,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
