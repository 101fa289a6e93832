import { timingSafeEqual } from 'node:crypto';
import { SIGNATURE_VERSION, WEBHOOK_HEADERS, signPayload } from './signature.js';

/** A verified event, as the gateway sent it. */
export interface WebhookEvent<Data = Record<string, unknown>> {
  id: string;
  event: string;
  /** ISO 8601 UTC. */
  created_at: string;
  environment: string;
  data: Data;
}

export type WebhookVerificationCode =
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_too_old'
  | 'timestamp_in_future'
  | 'signature_mismatch'
  | 'invalid_body'
  | 'id_mismatch';

/** Why a delivery was refused; `code` is stable, `message` is for people. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  constructor(
    readonly code: WebhookVerificationCode,
    message: string,
  ) {
    super(message);
  }
}

type HeaderBag = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export interface VerifyWebhookOptions {
  /** The raw request body, exactly as received (not re-serialised JSON). */
  body: string | Buffer | Uint8Array;
  /** The request headers: Node's `req.headers`, or a fetch `Headers`. */
  headers: HeaderBag;
  /** The subscription's signing secret, or several (during a rotation: any one matching is enough). */
  secret: string | readonly string[];
  /** How far the timestamp may be from now, either way, in seconds. Default 300 (5 minutes). */
  toleranceSeconds?: number;
  /** The current time in milliseconds (tests). */
  nowMs?: number;
}

/**
 * Checks a webhook delivery from the gateway and returns the event: the timestamp is within the window (rejects
 * replays of old deliveries and far-future stamps), one `v1` signature matches one of the secrets (constant-time
 * comparison), the body is an event envelope and its id is the signed one. Throws `WebhookVerificationError`
 * otherwise. De-duplicate on the returned `id`: a retried delivery carries the same id.
 */
export function verifyWebhook<Data = Record<string, unknown>>(options: VerifyWebhookOptions): WebhookEvent<Data> {
  const tolerance = options.toleranceSeconds ?? 300;
  const id = header(options.headers, WEBHOOK_HEADERS.id);
  const stamp = header(options.headers, WEBHOOK_HEADERS.timestamp);
  const signatures = header(options.headers, WEBHOOK_HEADERS.signature);
  if (!/^\d{1,12}$/.test(stamp))
    throw new WebhookVerificationError('malformed_header', `${WEBHOOK_HEADERS.timestamp} must be Unix seconds`);
  const timestamp = Number(stamp);
  const now = Math.floor((options.nowMs ?? Date.now()) / 1000);
  if (timestamp < now - tolerance)
    throw new WebhookVerificationError(
      'timestamp_too_old',
      `the delivery is ${now - timestamp} s old (tolerance ${tolerance} s)`,
    );
  if (timestamp > now + tolerance)
    throw new WebhookVerificationError(
      'timestamp_in_future',
      `the timestamp is ${timestamp - now} s ahead (tolerance ${tolerance} s)`,
    );

  const body =
    typeof options.body === 'string'
      ? Buffer.from(options.body)
      : Buffer.from(options.body.buffer, options.body.byteOffset, options.body.byteLength);
  const offered = signatures
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.startsWith(`${SIGNATURE_VERSION}=`))
    .map((part) => Buffer.from(part.slice(SIGNATURE_VERSION.length + 1), 'utf8'));
  if (offered.length === 0)
    throw new WebhookVerificationError(
      'malformed_header',
      `${WEBHOOK_HEADERS.signature} has no ${SIGNATURE_VERSION}= signature`,
    );
  const secrets = typeof options.secret === 'string' ? [options.secret] : options.secret;
  if (secrets.length === 0 || secrets.some((s) => s === ''))
    throw new TypeError("verifyWebhook: give the subscription's signing secret");
  let matched = false;
  for (const secret of secrets) {
    const expected = Buffer.from(signPayload(secret, id, timestamp, body), 'utf8');
    // Every pair is compared (no early exit) so timing says nothing about which one matched.
    for (const candidate of offered)
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
  }
  if (!matched)
    throw new WebhookVerificationError(
      'signature_mismatch',
      'no signature matches: wrong secret, or the body, id or timestamp was altered',
    );

  let event: unknown;
  try {
    event = JSON.parse(body.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('invalid_body', 'the body is not JSON');
  }
  const e = event as Partial<WebhookEvent<Data>> | null;
  if (
    typeof e !== 'object' ||
    e === null ||
    typeof e.id !== 'string' ||
    typeof e.event !== 'string' ||
    typeof e.data !== 'object'
  ) {
    throw new WebhookVerificationError(
      'invalid_body',
      'the body is not an event envelope {id, event, created_at, environment, data}',
    );
  }
  if (e.id !== id)
    throw new WebhookVerificationError('id_mismatch', `the body's id differs from ${WEBHOOK_HEADERS.id}`);
  return e as WebhookEvent<Data>;
}

function header(headers: HeaderBag, name: string): string {
  const value =
    typeof headers.get === 'function'
      ? (headers as { get(n: string): string | null }).get(name)
      : (headers as Record<string, string | string[] | undefined>)[name];
  const text = Array.isArray(value) ? value.join(', ') : value;
  if (text === undefined || text === null || text === '')
    throw new WebhookVerificationError('missing_header', `${name} is missing`);
  return text;
}
