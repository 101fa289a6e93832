import { hash } from 'node:crypto';
import { GatewayError } from '../../errors/gateway-error.js';

export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/**
 * Reads the Idempotency-Key header (draft-ietf-httpapi-idempotency-key-header): absent is fine; present, it must be
 * 1..255 printable characters with no control characters, sent once. Its value is not echoed in the error (keys
 * are sometimes built from customer data).
 */
export function readIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (Array.isArray(header)) {
    throw new GatewayError('invalid_idempotency_key', { header: 'idempotency-key', problem: 'must be sent once' });
  }
  if (header.length === 0 || header.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new GatewayError('invalid_idempotency_key', {
      header: 'idempotency-key',
      problem: `must have 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters (got ${header.length})`,
    });
  }
  if (/[\u0000-\u001f\u007f]/.test(header)) {
    throw new GatewayError('invalid_idempotency_key', {
      header: 'idempotency-key',
      problem: 'must not contain control characters',
    });
  }
  return header;
}

/**
 * A fingerprint of what the request asks for, so a reused key with a different request is told apart (422) from
 * a retry (replay). The body is canonicalised first (object keys sorted, no insignificant whitespace): a client
 * that re-serialises the same request differently is still retrying the same request. `headers`: what else makes
 * it another request (lines ending in a newline, each before the body; canonical JSON holds no raw newline, so no
 * body can pass for a header line), empty when nothing does.
 */
export function requestFingerprint(route: string, body: unknown, headers = ''): string {
  return hash('sha256', `${route}\n${headers}${canonicalJson(body)}`, 'hex');
}

/**
 * Recursive on purpose: every body reaching it came through the gateway's JSON parser, which refuses nesting
 * deeper than 128 levels (http/json-shape.ts) — a few thousand levels would overflow the stack here.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((k) => record[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(',')}}`;
}
