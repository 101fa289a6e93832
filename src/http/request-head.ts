import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import { lingerUntilBodyRead } from './lingering-close.js';

/**
 * Headers that must arrive once. Node keeps only the first `authorization` and `host` and joins the others
 * with ", " (`Idempotency-Key: a1, a1`), so a repeat would be silently resolved one way here and perhaps
 * another way by a proxy in front: refused instead, from the raw header list. RFC 9112 section 3.2: a request
 * with more than one Host field is a 400.
 */
const SINGLE_HEADERS = ['host', 'authorization', 'idempotency-key', 'x-upstream-key'] as const;
const SINGLE_LENGTHS = new Set(SINGLE_HEADERS.map((h) => h.length));

/**
 * Refuses a request head the rest of the gateway would read ambiguously: HTTP/1.1 without Host (RFC 9112
 * section 3.2; Node's own refusal has no body, so it is turned off and done here), or a single-valued header
 * sent twice. One pass over the raw header names, comparing only names of a matching length.
 */
export function checkRequestHead(raw: IncomingMessage): void {
  const names = raw.rawHeaders;
  let seen = 0;
  for (let i = 0; i < names.length; i += 2) {
    const name = names[i] as string;
    if (!SINGLE_LENGTHS.has(name.length)) continue;
    const index = SINGLE_HEADERS.indexOf(name.toLowerCase() as (typeof SINGLE_HEADERS)[number]);
    if (index === -1) continue;
    const bit = 1 << index;
    if ((seen & bit) !== 0) throw repeated(SINGLE_HEADERS[index] as string);
    seen |= bit;
  }
  if ((seen & 1) === 0 && raw.httpVersionMajor === 1 && raw.httpVersionMinor >= 1) {
    throw new GatewayError(
      'bad_request',
      { header: 'host', reason: 'an HTTP/1.1 request must carry a Host header (RFC 9112 section 3.2)' },
      { headers: { connection: 'close' } },
    );
  }
}

function repeated(header: string): GatewayError {
  const problem = 'must be sent once (it was sent more than once)';
  if (header === 'idempotency-key') return new GatewayError('invalid_idempotency_key', { header, problem });
  if (header === 'host')
    return new GatewayError(
      'bad_request',
      { header, reason: `the Host header ${problem} (RFC 9112 section 3.2)` },
      { headers: { connection: 'close' } },
    );
  return new GatewayError('invalid_header', { header, problem });
}

/**
 * An answer sent before the request's body was read (a 401, 404, 405, 409, 413, a redirect...) closes the
 * connection once written. Otherwise Node would keep reading and discarding the rest of the body to reuse the
 * connection, and a caller dribbling that body one byte at a time would hold the socket for as long as it
 * likes. The close lingers (lingering-close.ts): the rest of the body is read, within a bound, so a client still
 * sending it sees the answer rather than a reset. Requests without a body are left alone (keep-alive stays).
 */
export function closeIfBodyUnread(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  if (raw.complete) return;
  const length = raw.headers['content-length'];
  if (raw.headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) return;
  void reply.header('connection', 'close');
  lingerUntilBodyRead(raw);
}
