import { createHmac } from 'node:crypto';

/**
 * The signing scheme, in one place for the dispatcher and `verifyWebhook`:
 *
 *   signed string  = `${X-Webhook-Id}.${X-Webhook-Timestamp}.${raw body}`   (id, Unix seconds, exact body bytes)
 *   signature      = lower-case hex of HMAC-SHA256(secret, signed string)
 *   X-Signature    = `v1=<hex>` for each active secret, joined by ", " (several during a rotation)
 *
 * Binding the id and the timestamp into the MAC means neither can be swapped to replay a body; the version tag
 * lets the scheme change later without ambiguity.
 */
export const WEBHOOK_HEADERS = {
  id: 'x-webhook-id',
  timestamp: 'x-webhook-timestamp',
  signature: 'x-signature',
  event: 'x-webhook-event',
} as const;

export const SIGNATURE_VERSION = 'v1';

export function signPayload(secret: string, id: string, timestamp: number, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${id}.${timestamp}.`).update(body).digest('hex');
}

/** The value of `X-Signature` for these secrets. */
export function signatureHeader(
  secrets: readonly string[],
  id: string,
  timestamp: number,
  body: string | Buffer,
): string {
  return secrets.map((secret) => `${SIGNATURE_VERSION}=${signPayload(secret, id, timestamp, body)}`).join(', ');
}
