import { createAgent, type Agent } from '../net/undici.js';
import type { WebhookSubscription } from '../config/types.js';
import { parseRetryAfter } from '../core/limits/upstream-pauses.js';
import { guardedLookup } from '../net/address-guard.js';
import { WEBHOOK_HEADERS, signatureHeader } from './signature.js';

const MAX_ANSWER_BYTES = 4 * 1024;

export interface AttemptResult {
  /** 2xx: delivered. */
  ok: boolean;
  /** The receiver's status, when it answered. */
  status?: number;
  /** The start of the receiver's answer (for the CLI and dead-letter inspection). */
  answer?: string;
  /** What went wrong, in a line: "HTTP 503", "timeout after 10000 ms", "ECONNREFUSED"... */
  error?: string;
  /** The receiver's Retry-After in milliseconds, when it sent one. */
  retryAfterMs?: number;
}

/**
 * Sends one signed delivery: POST the envelope, signed afresh for this attempt (new timestamp, same id and body).
 * Redirects are not followed (a 3xx is a failure: a redirect could lead anywhere). The connection goes through an
 * Agent whose DNS lookup refuses private addresses unless the config allows them.
 */
export class WebhookSender {
  private readonly agent: Agent;

  constructor(private readonly options: { timeoutMs: number; allowPrivateAddresses: boolean; userAgent: string }) {
    this.agent = createAgent({
      connect: { timeout: options.timeoutMs, ...(options.allowPrivateAddresses ? {} : { lookup: guardedLookup }) },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      keepAliveTimeout: 10_000,
    });
  }

  async send(
    subscription: WebhookSubscription,
    delivery: { eventId: string; event: string; body: string },
    nowMs = Date.now(),
  ): Promise<AttemptResult> {
    const timestamp = Math.floor(nowMs / 1000);
    const signal = AbortSignal.timeout(this.options.timeoutMs);
    try {
      // undici's `request(url, { dispatcher })` spelled out (the index that exports it is not loaded: net/undici.ts).
      const url = new URL(subscription.url);
      const response = await this.agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': this.options.userAgent,
          [WEBHOOK_HEADERS.id]: delivery.eventId,
          [WEBHOOK_HEADERS.timestamp]: String(timestamp),
          [WEBHOOK_HEADERS.event]: delivery.event,
          [WEBHOOK_HEADERS.signature]: signatureHeader(
            subscription.secrets,
            delivery.eventId,
            timestamp,
            delivery.body,
          ),
        },
        body: delivery.body,
      });
      const answer = await readStart(response.body);
      const ok = response.statusCode >= 200 && response.statusCode < 300;
      const header = response.headers['retry-after'];
      const retryAfter = parseRetryAfter(Array.isArray(header) ? header[0] : header, nowMs);
      return {
        ok,
        status: response.statusCode,
        answer,
        ...(ok ? {} : { error: `HTTP ${response.statusCode}` }),
        ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}),
      };
    } catch (error) {
      return { ok: false, error: describe(error, signal, this.options.timeoutMs) };
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }

  /** Closes at once, cutting attempts in flight. */
  destroy(): Promise<void> {
    return this.agent.destroy().catch(() => undefined);
  }
}

async function readStart(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size < MAX_ANSWER_BYTES) parts.push(chunk);
    size += chunk.length;
    if (size >= MAX_ANSWER_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(parts).subarray(0, MAX_ANSWER_BYTES).toString('utf8');
}

function describe(error: unknown, signal: AbortSignal, timeoutMs: number): string {
  if (signal.aborted) return `timeout after ${timeoutMs} ms`;
  const e = error as { code?: string; cause?: { code?: string; message?: string }; message?: string };
  const code = e.cause?.code ?? e.code;
  if (code === 'EPRIVATEADDRESS') return e.cause?.message ?? e.message ?? 'private address refused';
  return code ?? e.message ?? 'delivery failed';
}
