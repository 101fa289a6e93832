// What the mock upstreams write: a JSON answer, or an event stream (one `event:` line when the API names its events,
// one JSON `data:` line each).
import type { ServerResponse } from 'node:http';

export type SseEvent = [event: string | undefined, data: unknown];

export function writeJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function writeSse(res: ServerResponse, events: SseEvent[], done = false): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [event, data] of events) {
    res.write(`${event === undefined ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`);
  }
  if (done) res.write('data: [DONE]\n\n');
  res.end();
}

/** Splits a JSON text in two pieces, so a streamed tool call's arguments arrive in more than one delta. */
export function twoPieces(text: string): [string, string] {
  const cut = Math.floor(text.length / 2);
  return [text.slice(0, cut), text.slice(cut)];
}

let counter = 0;
/** A fresh id with a prefix: `toolu_conf0001...`. */
export function freshId(prefix: string): string {
  counter += 1;
  return `${prefix}conf${String(counter).padStart(4, '0')}${Date.now().toString(36)}`;
}

/** Fixed token counts: the mock measures nothing, but every API's usage fields must be there and be numbers. */
export const USAGE = { input: 100, output: 10 };
