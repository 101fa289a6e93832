import type { FastifyReply, FastifyRequest } from 'fastify';
import { ADMIN } from '../auth/principal.js';
import type { CallScope, ClientWatch } from '../core/pipeline/call-scope.js';
import type { ChatService } from '../core/pipeline/chat-service.js';
import type { CallInput } from '../core/pipeline/model-call.js';
import { readIdempotencyKey } from '../core/pipeline/idempotency-key.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { AnswerRecorder, CallIdempotency } from './call-idempotency.js';
import { answerFromCache, bothRecorders, type ResponseCache } from './response-cache.js';
import type { CacheRule } from '../core/pipeline/answer-cache.js';
import { readUpstreamKey } from './chat-rules.js';

/**
 * What every model call of every route (chat, Responses, embeddings) takes from its request: the caller and its
 * rights, its limits and budget, the trace, `X-Upstream-Key`, `X-Context-Overflow`, the caller's side of the
 * connection (a call is cancelled when it hangs up), and a count of upstream attempts for the usage record.
 */
export function callInputOf(request: FastifyRequest, reply: FastifyReply, rawBody: string | undefined): CallInput {
  const principal = request.principal ?? ADMIN;
  return {
    caller: request.caller,
    ...(request.trace ? { trace: request.trace } : {}),
    ...(principal.limits ? { callerLimits: principal.limits } : {}),
    ...(principal.budget ? { budget: principal.budget } : {}),
    upstreamKey: readUpstreamKey(request.headers['x-upstream-key']),
    requestId: request.id,
    rawBody,
    client: watchClient(reply),
    contextOverflow: readContextOverflow(request.headers['x-context-overflow']),
    onAttempt: () => {
      request.attempts += 1;
    },
    onAdmitted: (rate) => {
      request.rate = rate;
    },
  };
}

/**
 * The request's Idempotency-Key, claimed: a recorder for the answer, `'answered'` when a replay (or refusal) was
 * sent, or undefined without a key (or with the store down under the `open` policy).
 */
export async function claimIdempotencyKey(
  request: FastifyRequest,
  reply: FastifyReply,
  idempotency: CallIdempotency,
  extra?: string,
): Promise<AnswerRecorder | 'answered' | undefined> {
  const key = readIdempotencyKey(request.headers['idempotency-key']);
  if (key === undefined) return undefined;
  const begun = await idempotency.begin(request, reply, key, request.body, extra);
  if (begun === 'answered') request.replayed = true;
  return begun;
}

type AnswerRecording = AnswerRecorder | 'answered' | undefined;

/**
 * What answers a call before it runs: Idempotency-Key replays and the response cache (and the chat service's
 * admission of a hit), and what keys its answer. One per handler, built when the handler is made.
 */
export interface AnsweredBefore {
  chat: ChatService;
  idempotency: CallIdempotency;
  cache?: ResponseCache | undefined;
  answerKey: AnswerKey;
}

/** What keys a call's answer for replay and the cache: its route's cache rule, and what of its URL changes the answer. */
export interface AnswerKey {
  readonly rule: CacheRule;
  /** What of the URL changes the answer (a surface whose model is in its path); absent for the others. */
  keyOf?(request: FastifyRequest): string | undefined;
}

/**
 * Before a model call runs: its Idempotency-Key claimed, then the response cache asked. `'answered'` when a replay,
 * a refusal or a cached answer was sent; otherwise what records the answer to come (for either, or both), if any.
 * Synchronous (no promise) for a call without an Idempotency-Key on a gateway without a cache: the usual call.
 */
export function recorderOf(
  request: FastifyRequest,
  reply: FastifyReply,
  before: AnsweredBefore,
  model: string,
  call: CallInput,
): AnswerRecording | Promise<AnswerRecording> {
  if (request.headers['idempotency-key'] === undefined && before.cache === undefined) return undefined;
  return claimAndLookUp(request, reply, before, model, call);
}

async function claimAndLookUp(
  request: FastifyRequest,
  reply: FastifyReply,
  before: AnsweredBefore,
  model: string,
  call: CallInput,
): Promise<AnswerRecording> {
  const { answerKey } = before;
  const extra = answerKey.keyOf?.(request);
  const claimed = await claimIdempotencyKey(request, reply, before.idempotency, extra);
  if (claimed === 'answered') return claimed;
  const looked = before.cache?.lookup(request, reply, answerKey.rule, model, extra);
  const cached = looked instanceof Promise ? await looked : looked;
  if (cached?.kind === 'hit') {
    await answerFromCache(request, reply, { response: cached.response, claimed, deps: before, model, call });
    return 'answered';
  }
  return bothRecorders(claimed, cached?.kind === 'miss' ? cached.recorder : undefined);
}

/** X-Context-Overflow: `error` (the default) or `truncate`; anything else is a 400 rather than a silent default. */
function readContextOverflow(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  const mode = (Array.isArray(value) ? value.join(',') : value).trim().toLowerCase();
  if (mode === 'truncate' || mode === 'error') return mode;
  throw new GatewayError('invalid_header', { header: 'x-context-overflow', allowed: ['error', 'truncate'] });
}

/** Cancels the try in progress when the caller hangs up before the answer was fully written. */
/**
 * A whole JSON answer: recorded first (Idempotency-Key, response cache) with the status and type the caller gets,
 * then sent with the upstream's headers. Shared by the surfaces' JSON answers and embeddings.
 */
export async function sendRecordedAnswer(
  request: FastifyRequest,
  reply: FastifyReply,
  recorder: AnswerRecorder | undefined,
  headers: Record<string, string>,
  answer: string | Buffer,
): Promise<FastifyReply> {
  await recorder?.json(
    200,
    { 'content-type': request.responseType },
    typeof answer === 'string' ? answer : answer.toString('utf8'),
  );
  return reply.headers(headers).type(request.responseType).send(answer);
}

export function watchClient(reply: FastifyReply): ClientWatch {
  let current: CallScope | undefined;
  const watch = {
    gone: false,
    follow(scope: CallScope) {
      current = scope;
      if (watch.gone) scope.clientGone();
    },
  };
  // A caller that left while its body was read or checked is gone before this listener exists: its 'close'
  // has fired already, so the call would run to the end (and its stream never start) for nobody.
  if (reply.raw.destroyed || reply.raw.socket?.destroyed === true) {
    watch.gone = true;
    return watch;
  }
  reply.raw.once('close', () => {
    if (reply.raw.writableFinished) return;
    watch.gone = true;
    current?.clientGone();
  });
  return watch;
}

/**
 * The named query parameters of the caller's URL that are present (single plain values only), as a query string to
 * append (`?beta=true`), or undefined when none is. Only names a native path lists go on: nothing else of the URL.
 */
export function pickQuery(request: FastifyRequest, names: readonly string[] | undefined): string | undefined {
  const query = request.query as Record<string, unknown> | undefined;
  const picked = new URLSearchParams();
  for (const name of names ?? []) {
    const value = query?.[name];
    if (typeof value === 'string' && /^[A-Za-z0-9._-]{1,64}$/.test(value)) picked.append(name, value);
  }
  return picked.size > 0 ? `?${picked.toString()}` : undefined;
}

/** The named caller headers that are present (single values only), or undefined when none is. */
export function pickHeaders(
  request: FastifyRequest,
  names: readonly string[] | undefined,
): Record<string, string> | undefined {
  let picked: Record<string, string> | undefined;
  for (const name of names ?? []) {
    const value = request.headers[name];
    if (typeof value === 'string' && value.length <= 1024 && /^[\x20-\x7e]*$/.test(value))
      (picked ??= {})[name] = value;
  }
  return picked;
}
