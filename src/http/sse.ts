import type { ErrorBody } from '../errors/gateway-error.js';

/**
 * Server-Sent Events framing (WHATWG HTML, "Server-sent events"). Event names and ids may not contain CR or LF
 * (they would end the field early and let a value inject fields); data with line breaks becomes one `data:`
 * line per line, which the receiver joins back with "\n".
 */
export const DONE_FRAME = 'data: [DONE]\n\n';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  // nginx and similar proxies buffer responses unless told not to; a buffered stream is not a stream.
  'x-accel-buffering': 'no',
} as const;

export function formatEvent(data: string, options: { event?: string; id?: string } = {}): string {
  let frame = '';
  if (options.event !== undefined) frame += `event: ${singleLine('event', options.event)}\n`;
  if (options.id !== undefined) frame += `id: ${singleLine('id', options.id)}\n`;
  if (!data.includes('\n') && !data.includes('\r')) return `${frame}data: ${data}\n\n`;
  for (const line of data.split(/\r\n|\r|\n/)) frame += `data: ${line}\n`;
  return `${frame}\n`;
}

/** The one final event of a stream that failed after it started: the error body, and never a [DONE]. */
export function formatErrorEvent(error: ErrorBody): string {
  return formatEvent(JSON.stringify(error), { event: 'error' });
}

function singleLine(field: string, value: string): string {
  if (/[\r\n]/.test(value)) throw new Error(`SSE ${field} must not contain CR or LF`);
  return value;
}
