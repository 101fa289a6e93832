import type { FastifyReply, FastifyRequest } from 'fastify';
import { readIdempotencyKey, requestFingerprint } from '../core/pipeline/idempotency-key.js';
import { ERROR_CODES, type ErrorCode } from '../errors/codes.js';
import { GatewayError, isGatewayError } from '../errors/gateway-error.js';
import type { IdempotencyStore } from '../store/store-contract.js';
import { REPLAYED_HEADER, beginClaim, replayable } from './call-idempotency.js';
import { open, seal, sealedKeyName, type SealBinding } from '../secrets/sealing.js';

export interface SealedIdempotencyOptions {
  store: IdempotencyStore;
  ttlMs: number;
  leaseMs: number;
  onStoreFailure: 'open' | 'closed';
  onStoreHealth: (healthy: boolean, error?: unknown) => void;
  /**
   * A server secret the store does not hold (the first administrator token): mixed into the stored key's name and
   * into the sealing key, so that even a guessable Idempotency-Key read from the store opens nothing.
   */
  pepper: string;
}

/** An answer to send: its status and JSON body. */
export interface SealedAnswer {
  status: number;
  body: Record<string, unknown>;
}

/**
 * Idempotency-Key for answers that carry a secret shown once (a key's creation or rotation). A retry with the same
 * key and body gets the same answer, secret included (a client whose connection dropped must not lose the key it
 * paid for, nor create a second one), yet the store never holds the secret readably (secrets/sealing.ts):
 *
 * - the stored answer is sealed with AES-256-GCM under a key derived from the Idempotency-Key value and a server
 *   secret (the pepper), bound to the caller, the request's fingerprint and the status;
 * - the store is given only an HMAC of the Idempotency-Key under the pepper, so what opens the answer is not in
 *   the store, and a guessable Idempotency-Key cannot be tried against it without the pepper.
 *
 * Whoever can read the store learns neither the secret nor how to recover it; whoever replays must present the
 * Idempotency-Key itself (and be the same caller). Claims here are short (one store write), so no heartbeat.
 */
export class SealedIdempotency {
  constructor(private readonly options: SealedIdempotencyOptions) {}

  /** Runs `produce` once per (caller, Idempotency-Key, request); sends its answer, or the sealed copy of it. */
  async run(
    request: FastifyRequest,
    reply: FastifyReply,
    requestShape: unknown,
    produce: () => Promise<SealedAnswer>,
  ): Promise<FastifyReply> {
    const key = readIdempotencyKey(request.headers['idempotency-key']);
    if (key === undefined) return send(reply, request, await produce());
    const scope = request.caller;
    const { pepper } = this.options;
    const storedKey = sealedKeyName(pepper, key);
    const fingerprint = requestFingerprint(request.routeName ?? 'keys', requestShape);
    const begun = await beginClaim(this.options, scope, storedKey, fingerprint);
    if (begun === undefined) return send(reply, request, await produce()); // the store is down, policy `open`
    if (begun.state === 'completed') {
      request.replayed = true;
      const { status } = begun.response;
      const body = open(begun.response.body, { idempotencyKey: key, pepper, scope, fingerprint, status });
      if (body === undefined)
        throw new GatewayError('internal_error', {
          problem:
            'the stored answer of this Idempotency-Key could not be opened (was the first administrator token changed?)',
        });
      if (status >= 400) request.errorCode = errorCodeOf(body);
      return reply.code(status).header(REPLAYED_HEADER, 'true').type(request.responseType).send(body);
    }
    let answer: SealedAnswer;
    try {
      answer = await produce();
    } catch (error) {
      // A refusal that describes the request is kept like an answer (the same rule as chat); anything else frees the key.
      if (isGatewayError(error) && replayable(error.status)) {
        await this.complete(
          { idempotencyKey: key, pepper, scope, fingerprint, status: error.status },
          storedKey,
          JSON.stringify(error.toBody()),
        );
      } else {
        await this.options.store
          .abandon(scope, storedKey, fingerprint)
          .catch((e: unknown) => this.options.onStoreHealth(false, e));
      }
      throw error;
    }
    await this.complete(
      { idempotencyKey: key, pepper, scope, fingerprint, status: answer.status },
      storedKey,
      JSON.stringify(answer.body),
    );
    return send(reply, request, answer);
  }

  private async complete(binding: SealBinding, storedKey: string, body: string): Promise<void> {
    const response = {
      status: binding.status,
      headers: {},
      kind: 'json' as const,
      body: seal(body, binding),
      storedAt: new Date().toISOString(),
    };
    await this.options.store
      .complete(
        { scope: binding.scope, key: storedKey, fingerprint: binding.fingerprint },
        response,
        this.options.ttlMs,
      )
      .catch((error: unknown) => this.options.onStoreHealth(false, error));
  }
}

function send(reply: FastifyReply, request: FastifyRequest, answer: SealedAnswer): FastifyReply {
  return reply.code(answer.status).type(request.responseType).send(answer.body);
}

/** The `code` of a stored error body (for the access line and usage record of its replay). */
function errorCodeOf(body: string): ErrorCode | undefined {
  try {
    const code = (JSON.parse(body) as { code?: unknown }).code;
    return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code) ? (code as ErrorCode) : undefined;
  } catch {
    return undefined;
  }
}
