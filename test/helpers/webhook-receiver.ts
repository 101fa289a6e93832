/**
 * A real webhook receiver on loopback (node:http): records every delivery (headers, raw body bytes, arrival
 * time) and answers with the statuses queued with `respond`, then with the default (200). `hang` makes it accept
 * and never answer (a dead receiver); `open` counts connections in flight.
 *
 * Each receiver has a path of its own: test files run in parallel processes, and a port this receiver got may have
 * been another receiver's a moment before, whose gateway still retries to it. Such a stray delivery (another
 * path) is answered 404 and not recorded.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
  atMs: number;
  /** What the receiver answered. */
  answered: number | 'hang';
}

export interface WebhookReceiver {
  url: string;
  deliveries: Delivery[];
  /** Queue answers: a status, or 'hang' (never answer). */
  respond(...answers: Array<number | 'hang'>): void;
  setDefault(answer: number | 'hang'): void;
  /** Requests being handled right now, and the most seen at once. */
  inFlight(): { now: number; max: number };
  waitFor(count: number, timeoutMs?: number): Promise<Delivery[]>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const deliveries: Delivery[] = [];
  const queue: Array<number | 'hang'> = [];
  const hanging = new Set<ServerResponse>();
  let fallback: number | 'hang' = 200;
  let now = 0;
  let max = 0;
  const path = `/hooks/${randomBytes(8).toString('hex')}`;
  const server = createServer((req, res) => {
    if (req.url !== path) {
      req.resume();
      res.writeHead(404).end();
      return;
    }
    now += 1;
    max = Math.max(max, now);
    res.on('close', () => {
      now -= 1;
    });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = queue.shift() ?? fallback;
      deliveries.push({
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        atMs: Date.now(),
        answered: answer,
      });
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      res.writeHead(answer, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ received: answer < 300 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    deliveries,
    respond: (...answers) => queue.push(...answers),
    setDefault: (answer) => {
      fallback = answer;
    },
    inFlight: () => ({ now, max }),
    async waitFor(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (deliveries.length < count) {
        if (Date.now() > deadline)
          throw new Error(`expected ${count} deliveries, got ${deliveries.length} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 10));
      }
      return deliveries.slice(0, count);
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
