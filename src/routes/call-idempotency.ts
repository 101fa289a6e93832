import { hash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requestFingerprint } from '../core/pipeline/idempotency-key.js';
import { GatewayError, isGatewayError } from '../errors/gateway-error.js';
import { SSE_HEADERS } from '../http/sse.js';
import type { IdempotencyBegin, IdempotencyClaim, IdempotencyStore, StoredResponse } from '../store/store-contract.js';
import type { AnswerRecorder } from '../core/pipeline/answer-recorder.js';

/** What a running keyed call reports when it ends, so its answer can be replayed (core/pipeline/answer-recorder.ts). */
export type { AnswerRecorder } from '../core/pipeline/answer-recorder.js';

export interface IdempotencyOptions {
  store: IdempotencyStore;
  ttlMs: number;
  /**
   * A claim's lease. The running call renews it every third of it (a heartbeat), so a call may run for as long as
   * it needs, while a claim of a crashed holder lapses at most one lease after its last heartbeat.
   */
  leaseMs: number;
  /** idempotency.max_replay_bytes: an answer larger than this reaches its caller but is not stored. */
  maxReplayBytes: number;
  onStoreFailure: 'open' | 'closed';
  onStoreHealth: (healthy: boolean, error?: unknown) => void;
}

/**
 * One claim of an Idempotency-Key in the store, under the store-failure policy: `claimed` (run the call),
 * `completed` (replay its answer), or undefined (the store is down and the policy is `open`: run unprotected). A key
 * reused with another request (422) or still running (409 with Retry-After) is thrown as its refusal.
 */
export async function beginClaim(
  options: Pick<IdempotencyOptions, 'store' | 'leaseMs' | 'onStoreFailure' | 'onStoreHealth'>,
  scope: string,
  key: string,
  fingerprint: string,
): Promise<Extract<IdempotencyBegin, { state: 'claimed' | 'completed' }> | undefined> {
  let begun: IdempotencyBegin;
  try {
    begun = await options.store.begin(scope, key, fingerprint, options.leaseMs);
    options.onStoreHealth(true);
  } catch (error) {
    options.onStoreHealth(false, error);
    if (options.onStoreFailure === 'open') return undefined;
    throw new GatewayError('idempotency_store_unavailable', { policy: 'closed' }, { cause: error });
  }
  if (begun.state === 'mismatch') throw new GatewayError('idempotency_key_mismatch', { header: 'idempotency-key' });
  if (begun.state === 'in_progress') {
    const seconds = Math.max(1, Math.ceil(begun.retryAfterMs / 1000));
    throw new GatewayError(
      'idempotency_in_progress',
      { retry_after_seconds: seconds },
      { headers: { 'retry-after': String(seconds) } },
    );
  }
  return begun;
}

/**
 * Request headers that change the answer (how a context overflow is handled; what a native Anthropic call
 * forwards): part of the response cache's key, and of an Idempotency-Key's request.
 */
export const ANSWER_HEADERS = ['x-context-overflow', 'anthropic-version', 'anthropic-beta'] as const;

/**
 * What makes a keyed request another request besides its route and body, as the response cache tells them apart:
 * the caller's own provider key (`X-Upstream-Key`: another provider account, whose answer the first call's is not;
 * only its SHA-256 goes into the fingerprint, itself a hash) and the headers that change the answer. Empty for a
 * request with none of them, whose fingerprint is the body's alone.
 */
function requestHeadersPart(request: FastifyRequest, extra: string | undefined): string {
  // What of the URL changes the answer (a surface whose model is in its path): absent for the others.
  let part = extra === undefined ? '' : `url:${JSON.stringify(extra)}\n`;
  const ownKey = request.headers['x-upstream-key'];
  if (typeof ownKey === 'string') part += `own-key:${hash('sha256', ownKey, 'hex')}\n`;
  for (const name of ANSWER_HEADERS) {
    const value = request.headers[name];
    if (value !== undefined) part += `${name}:${Array.isArray(value) ? value.join(',') : value}\n`;
  }
  return part;
}

/** A replay is marked so a client can tell it from a fresh answer (as Stripe and the IETF draft's examples do). */
export const REPLAYED_HEADER = 'idempotent-replayed';

/** Results that describe the request itself and are safe to replay; everything else frees the key. */
export function replayable(status: number): boolean {
  return status < 500 && status !== 408 && status !== 409 && status !== 425 && status !== 429;
}

/**
 * Idempotency-Key on chat (draft-ietf-httpapi-idempotency-key-header): the key is scoped to the caller; the
 * request is fingerprinted (route, canonical JSON of the body, the caller's own provider key hashed and the
 * headers that change the answer); the first call runs and its answer is stored for `ttlMs`; a retry of the same
 * request gets that answer again without calling the upstream; a retry while the first still runs gets 409 with
 * Retry-After; the same key with another request (another body, another `X-Upstream-Key`...) gets 422.
 */
export class CallIdempotency {
  private readonly running = new Set<IdempotencyClaim>();
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(private readonly options: IdempotencyOptions) {}

  /** Stops the heartbeat (at shutdown); claims still running then lapse one lease later. */
  close(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  /**
   * Returns the recorder of a freshly claimed call, `'answered'` when a replay or refusal was sent, or undefined
   * when the call runs unprotected (the store is down and the policy is `open`).
   */
  async begin(
    request: FastifyRequest,
    reply: FastifyReply,
    key: string,
    body: unknown,
    extra?: string,
  ): Promise<AnswerRecorder | 'answered' | undefined> {
    const scope = request.caller;
    // Scoped by route too: the same key and body sent to chat and to the Responses route are two requests.
    const fingerprint = requestFingerprint(request.routeName ?? 'chat', body, requestHeadersPart(request, extra));
    const begun = await beginClaim(this.options, scope, key, fingerprint);
    if (begun === undefined) return undefined;
    if (begun.state === 'claimed') return this.recorder(request, key, fingerprint);
    // Before the send: the request's record is made as its answer goes out (src/http/server.ts, the answer gate).
    request.replayed = true;
    await replay(reply, begun.response);
    return 'answered';
  }

  /** Records the outcome of a thrown error: a replayable 4xx is stored, anything else frees the key. */
  async settleError(recorder: AnswerRecorder, error: unknown, responseType: string): Promise<void> {
    if (isGatewayError(error) && replayable(error.status)) {
      await recorder.json(
        error.status,
        { 'content-type': responseType, ...(error.headers ?? {}) },
        JSON.stringify(error.toBody()),
      );
    } else {
      await recorder.failed();
    }
  }

  private recorder(request: FastifyRequest, key: string, fingerprint: string): AnswerRecorder {
    const { store, ttlMs, maxReplayBytes } = this.options;
    const scope = request.caller;
    const claim: IdempotencyClaim = { scope, key, fingerprint };
    this.track(claim);
    const failed = () => {
      this.running.delete(claim);
      return store.abandon(scope, key, fingerprint).catch((error: unknown) => this.options.onStoreHealth(false, error));
    };
    const tooLarge = () => {
      request.replayNotStored = 'too_large';
    };
    const save = async (response: StoredResponse) => {
      if (Buffer.byteLength(response.body) > maxReplayBytes) {
        tooLarge();
        return failed();
      }
      this.running.delete(claim);
      await store.complete(claim, response, ttlMs).catch((error: unknown) => this.options.onStoreHealth(false, error));
    };
    return {
      maxBytes: maxReplayBytes,
      json: (status, headers, body) =>
        save({ status, headers, kind: 'json', body, storedAt: new Date().toISOString() }),
      stream: (headers, text) =>
        save({ status: 200, headers, kind: 'sse', body: text, storedAt: new Date().toISOString() }),
      tooLarge,
      failed,
    };
  }

  /** Keeps the leases of running claims alive; the timer runs only while some claim is running. */
  private track(claim: IdempotencyClaim): void {
    this.running.add(claim);
    if (this.heartbeat) return;
    const every = Math.max(50, Math.floor(this.options.leaseMs / 3));
    this.heartbeat = setInterval(() => {
      if (this.running.size === 0) {
        this.close();
        return;
      }
      this.options.store.renew([...this.running], this.options.leaseMs).then(
        () => this.options.onStoreHealth(true),
        (error: unknown) => this.options.onStoreHealth(false, error),
      );
    }, every);
    this.heartbeat.unref();
  }
}

/**
 * Passes a keyed stream's frames through while keeping a copy for replay. The copy is bounded by the recorder's
 * `maxBytes`: past it, the copy is dropped at once (an answer of any size must not be held twice in memory) and
 * the stream goes on to its caller unrecorded. Only a stream that ended well (chat: [DONE]; `isCompleteEnd`) and fit is stored; any other
 * ending (too large, error event, client gone) frees the key when the call ends, so a retry runs again. The key
 * stays claimed until then, so a duplicate sent meanwhile still gets 409 rather than a second run.
 */
export async function* recordStream(
  frames: AsyncGenerator<string>,
  recorder: AnswerRecorder,
  isCompleteEnd: (frame: string) => boolean,
  contentType: string = SSE_HEADERS['content-type'],
): AsyncGenerator<string> {
  let copy: string[] | undefined = [];
  let bytes = 0;
  let complete = false;
  try {
    for await (const frame of frames) {
      if (copy !== undefined) {
        bytes += Buffer.byteLength(frame);
        if (bytes > recorder.maxBytes) {
          copy = undefined;
          recorder.tooLarge();
        } else {
          copy.push(frame);
        }
      }
      if (isCompleteEnd(frame)) complete = true;
      yield frame;
    }
  } finally {
    if (complete && copy !== undefined) await recorder.stream({ 'content-type': contentType }, copy.join(''));
    else await recorder.failed();
  }
}

async function replay(reply: FastifyReply, response: StoredResponse): Promise<void> {
  // A stream's own content type (stored with it: SSE, or a JSON-array stream's) wins over the SSE default.
  if (response.kind === 'sse') void reply.headers(SSE_HEADERS);
  void reply.code(response.status).headers(response.headers).header(REPLAYED_HEADER, 'true');
  await reply.send(response.body);
}
