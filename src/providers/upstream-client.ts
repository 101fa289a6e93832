import { Readable } from 'node:stream';
import { createPool, type Pool } from '../net/undici.js';
import type { Dispatcher } from 'undici';
import type { UpstreamConfig } from '../config/types.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { CallContext } from './provider-contract.js';
import { scrubText } from '../secrets/redact.js';
import { drainQuietly, readBodyBytes, readBodyText } from './response-body.js';
import { toUpstreamError } from './transport-errors.js';
import { mapUpstreamHttpError } from './upstream-http-error.js';

const MAX_ERROR_BODY_BYTES = 64 * 1024;
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/**
 * The HTTP side every provider shares: one keep-alive undici Pool per upstream (no connection bound unless one is
 * configured) and timeouts (connect, first byte = headers, idle = body), and the mapping of transport failures and
 * non-2xx answers to our error model (the key used for the call scrubbed from whatever the provider says).
 */
export class UpstreamClient {
  readonly basePath: string;
  private readonly pool: Pool;

  constructor(private readonly config: UpstreamConfig) {
    const url = new URL(config.baseUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = createPool(url.origin, {
      // No bound unless configured: a bounded pool queues the calls past it invisibly, and past the first-byte
      // timeout they failed as the provider's fault. Bounds are enforced in front of the pool, with a
      // short visible wait and 503 upstream_busy (src/core/limits/upstream-capacity.ts), so this queue stays empty.
      connections: config.maxConnections ?? null,
      // TLS 1.2 or newer to every https:// upstream (plain http:// only to loopback or hosts the config allows).
      connect: { timeout: config.timeouts.connectMs, minVersion: 'TLSv1.2' },
      headersTimeout: config.timeouts.firstByteMs,
      bodyTimeout: config.timeouts.idleMs,
      keepAliveTimeout: 30_000,
    });
  }

  /** Sends a request; resolves with a 2xx response (body unread), rejects with a GatewayError otherwise. */
  async send(
    request: {
      method: 'GET' | 'POST' | 'DELETE';
      path: string;
      headers: Record<string, string>;
      /** A string, or bytes streamed as they come (a batch's input file: never whole in memory). */
      body?: string | AsyncIterable<Uint8Array>;
    },
    signal: AbortSignal,
    apiKeyOverride: string | undefined,
  ): Promise<Dispatcher.ResponseData> {
    let response: Dispatcher.ResponseData;
    try {
      // Spelled out, not `{ ...request, signal }`: undici's Request constructor is several times slower on the
      // spread object (a different shape on the hot path).
      response = await this.pool.request({
        method: request.method,
        path: request.path,
        headers: request.headers,
        body: typeof request.body === 'object' ? Readable.from(request.body) : request.body,
        signal,
      });
    } catch (error) {
      throw toUpstreamError(error, this.config.name, signal);
    }
    if (response.statusCode >= 200 && response.statusCode < 300) return response;
    const bodyText = await readBodyText(response.body, MAX_ERROR_BODY_BYTES, true).catch(() => '');
    const retryAfter = response.headers['retry-after'];
    throw mapUpstreamHttpError({
      upstream: this.config.name,
      status: response.statusCode,
      bodyText,
      retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
      keyFromCaller: apiKeyOverride !== undefined,
      secrets: [apiKeyOverride, this.config.apiKey],
    });
  }

  /**
   * A 2xx answer's body as bytes, as text and parsed JSON; unreadable or non-JSON bodies are
   * `upstream_invalid_response`. (The text is the one the parse read: searching it costs no second decoding.)
   */
  async readJson(
    response: Dispatcher.ResponseData,
    signal: AbortSignal,
  ): Promise<{ bytes: Buffer; text: string; value: unknown }> {
    let bytes: Buffer;
    try {
      bytes = await readBodyBytes(response.body, MAX_ANSWER_BYTES);
    } catch (error) {
      throw toUpstreamError(error, this.config.name, signal);
    }
    const text = bytes.toString('utf8');
    try {
      return { bytes, text, value: JSON.parse(text) as unknown };
    } catch {
      throw new GatewayError('upstream_invalid_response', { upstream: this.config.name, reason: 'body is not JSON' });
    }
  }

  /** GET a model list and return the objects of its `field` array (`data`, `models`...), or fail as unreadable. */
  async getList(
    path: string,
    headers: Record<string, string>,
    field: string,
    signal: AbortSignal,
  ): Promise<Array<Record<string, unknown>>> {
    const { value } = await this.readJson(await this.send({ method: 'GET', path, headers }, signal, undefined), signal);
    const list = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[field] : undefined;
    if (!Array.isArray(list)) {
      throw new GatewayError('upstream_invalid_response', {
        upstream: this.config.name,
        reason: `the model list has no ${field} array`,
      });
    }
    return list.filter((item): item is Record<string, unknown> => typeof item === 'object' && item !== null);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** A stream answer must be an event stream: anything else is drained and refused as unreadable. */
export function expectEventStream(
  response: Dispatcher.ResponseData,
  upstream: string,
  secrets: ReadonlyArray<string | undefined>,
): void {
  const contentType = String(response.headers['content-type'] ?? '');
  if (contentType.startsWith('text/event-stream')) return;
  drainQuietly(response.body);
  // The header is the upstream's text like any other: scrubbed, then cut.
  const got = scrubText(contentType.split(';')[0] ?? '', secrets).slice(0, 100);
  throw new GatewayError('upstream_invalid_response', {
    upstream,
    reason: `expected text/event-stream, got ${got || 'no content type'}`,
  });
}

/** What every provider sends upstream for a call: its request id, and its trace context when tracing is on. */
export function addCallHeaders(
  headers: Record<string, string>,
  call: Pick<CallContext, 'requestId' | 'traceparent'>,
): void {
  headers['x-request-id'] = call.requestId;
  if (call.traceparent !== undefined) headers.traceparent = call.traceparent;
}
