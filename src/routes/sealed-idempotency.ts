import { createCipheriv, createDecipheriv, hash, hkdfSync, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { readIdempotencyKey, requestFingerprint } from '../core/idempotency-key.js';
import { GatewayError, isGatewayError } from '../errors/gateway-error.js';
import type { IdempotencyStore } from '../store/contract.js';
import { REPLAYED_HEADER } from './chat-idempotency.js';

export interface SealedIdempotencyOptions {
  store: IdempotencyStore;
  ttlMs: number;
  leaseMs: number;
  onStoreFailure: 'open' | 'closed';
  onStoreHealth: (healthy: boolean, error?: unknown) => void;
}

/** An answer to send: its status and JSON body. */
export interface SealedAnswer {
  status: number;
  body: Record<string, unknown>;
}

const SEALED_PREFIX = 'sealed.v1.';

/**
 * Idempotency-Key for answers that carry a secret shown once (a key's creation or rotation). A retry with the same
 * key and body gets the same answer, secret included (a client whose connection dropped must not lose the key it
 * paid for, nor create a second one), yet the store never holds the secret readably:
 *
 * - the stored answer is sealed with AES-256-GCM under a key derived (HKDF-SHA256) from the Idempotency-Key value
 *   and the caller;
 * - the store is given only the SHA-256 of the Idempotency-Key, so what opens the answer is not in the store.
 *
 * Whoever can read the store learns neither the secret nor how to recover it; whoever replays must present the
 * Idempotency-Key itself (and be the same caller). Claims here are short (one store write), so no heartbeat.
 */
export class SealedIdempotency {
  constructor(private readonly options: SealedIdempotencyOptions) {}

  /** Runs `produce` once per (caller, Idempotency-Key, request); sends its answer, or the sealed copy of it. */
  async run(request: FastifyRequest, reply: FastifyReply, requestShape: unknown, produce: () => Promise<SealedAnswer>): Promise<FastifyReply> {
    const key = readIdempotencyKey(request.headers['idempotency-key']);
    if (key === undefined) return send(reply, request, await produce());
    const { store } = this.options;
    const scope = request.caller;
    const storedKey = `sealed:${hash('sha256', key, 'hex')}`;
    const fingerprint = requestFingerprint(request.routeName ?? 'keys', requestShape);
    let begun: Awaited<ReturnType<IdempotencyStore['begin']>>;
    try {
      begun = await store.begin(scope, storedKey, fingerprint, this.options.leaseMs);
      this.options.onStoreHealth(true);
    } catch (error) {
      this.options.onStoreHealth(false, error);
      if (this.options.onStoreFailure === 'open') return send(reply, request, await produce());
      throw new GatewayError('idempotency_store_unavailable', { policy: 'closed' }, { cause: error });
    }
    switch (begun.state) {
      case 'mismatch':
        throw new GatewayError('idempotency_key_mismatch', { header: 'idempotency-key' });
      case 'in_progress': {
        const seconds = Math.max(1, Math.ceil(begun.retryAfterMs / 1000));
        throw new GatewayError('idempotency_in_progress', { retry_after_seconds: seconds }, { headers: { 'retry-after': String(seconds) } });
      }
      case 'completed': {
        request.replayed = true;
        const body = open(begun.response.body, key, scope);
        if (body === undefined) throw new GatewayError('internal_error', { problem: 'the stored answer of this Idempotency-Key could not be opened' });
        return reply.code(begun.response.status).header(REPLAYED_HEADER, 'true').type(request.responseType).send(body);
      }
      case 'claimed':
        break;
    }
    let answer: SealedAnswer;
    try {
      answer = await produce();
    } catch (error) {
      // A refusal that describes the request (4xx but 408/409/425/429) is kept like an answer; anything else frees the key.
      if (isGatewayError(error) && error.status < 500 && ![408, 409, 425, 429].includes(error.status)) {
        await this.complete(scope, storedKey, fingerprint, error.status, JSON.stringify(error.toBody()), key);
      } else {
        await store.abandon(scope, storedKey, fingerprint).catch((e: unknown) => this.options.onStoreHealth(false, e));
      }
      throw error;
    }
    await this.complete(scope, storedKey, fingerprint, answer.status, JSON.stringify(answer.body), key);
    return send(reply, request, answer);
  }

  private async complete(scope: string, storedKey: string, fingerprint: string, status: number, body: string, key: string): Promise<void> {
    const response = { status, headers: {}, kind: 'json' as const, body: seal(body, key, scope), storedAt: new Date().toISOString() };
    await this.options.store.complete(scope, storedKey, fingerprint, response, this.options.ttlMs).catch((error: unknown) => this.options.onStoreHealth(false, error));
  }
}

function send(reply: FastifyReply, request: FastifyRequest, answer: SealedAnswer): FastifyReply {
  return reply.code(answer.status).type(request.responseType).send(answer.body);
}

function sealingKey(idempotencyKey: string, scope: string): Buffer {
  return Buffer.from(hkdfSync('sha256', idempotencyKey, scope, 'llm-gateway sealed idempotent answer', 32));
}

/** `sealed.v1.` + base64 of IV (12 bytes), tag (16 bytes) and ciphertext. */
export function seal(text: string, idempotencyKey: string, scope: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(idempotencyKey, scope), iv);
  const ciphertext = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64');
}

/** The text sealed by `seal`, or undefined when it is not one or does not open with this key. */
export function open(sealed: string, idempotencyKey: string, scope: string): string | undefined {
  if (!sealed.startsWith(SEALED_PREFIX)) return undefined;
  const bytes = Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64');
  if (bytes.length < 28) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(idempotencyKey, scope), bytes.subarray(0, 12));
    decipher.setAuthTag(bytes.subarray(12, 28));
    return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
