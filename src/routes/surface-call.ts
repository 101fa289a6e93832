import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ChatService } from '../core/pipeline/chat-service.js';
import type { StartedStream } from '../core/pipeline/model-call.js';
import { SSE_HEADERS } from '../http/sse.js';
import type { SurfaceDescriptor, StreamMode } from '../surfaces/descriptor.js';
import { writeEventStream } from '../http/sse-writer.js';
import { toGatewayError } from '../http/error-handler.js';
import { endBeforeAnswer, endClientGone } from '../http/request-end.js';
import type { StreamBatch, StreamChunk, Usage } from '../providers/provider-contract.js';
import { ClientGoneError } from '../errors/client-gone.js';
import type { GatewayError } from '../errors/gateway-error.js';
import { recordStream, type AnswerRecorder, type CallIdempotency } from './call-idempotency.js';
import { checkConversation } from './chat-rules.js';
import {
  callInputOf,
  pickHeaders,
  pickQuery,
  recorderOf,
  sendRecordedAnswer,
  type AnswerKey,
  type AnsweredBefore,
} from './model-call-http.js';
import type { ResponseCache } from './response-cache.js';
import { ADMIN, authorizeModel, principalSnapshot } from '../auth/principal.js';
import { publicOrigin } from '../http/public-origin.js';
import type { RequestTrace } from '../core/pipeline/trace-contract.js';
import { deliveredChars } from '../core/limits/admission-estimate.js';
import { NativeForward, type ApiSurface, type StreamEncoder, type SurfaceCall } from '../surfaces/surface.js';
import { DROPPED_FIELDS_HEADER, TranslationNotes } from '../surfaces/translation-notes.js';

/**
 * The answer text kept for webhook subscriptions that opted in to content (`include_content`): the first 256 Ki
 * characters. A stream may be any length; what one request keeps for its event must not be.
 */
const MAX_CAPTURED_ANSWER_CHARS = 256 * 1024;

/**
 * The HTTP half of every model call, whatever its API surface (src/surfaces/surface-registry.ts): chat completions (the
 * surface is the chat model itself), the Responses API, the Messages API, the Gemini API (each translated at the edge
 * by its descriptor's translation, or forwarded natively). Validated body in, the surface's JSON or stream out; the
 * call itself (plan, admit, run, settle) is core's CallPipeline and ModelCall.
 */
export function makeSurfaceCallHandler(descriptor: SurfaceDescriptor, surface: ApiSurface, deps: PipelineDeps) {
  const { chat, idempotency, bodyLimitBytes, beginTrace } = deps;
  const captureAnswer = deps.captureAnswer === true;
  const { modelOf, streamOf } = descriptor;
  const before: AnsweredBefore = { chat, idempotency, cache: deps.cache, answerKey: answerKeyOf(descriptor) };
  const forward: ForwardSpec = { surface, before, ...(descriptor.native ? { native: descriptor.native } : {}) };
  const handler = async function surfaceCall(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const mode = streamOf(request);
    const model = modelOf(request);
    const notes = new TranslationNotes(chat.translationOf(model));
    const surfaceCall: SurfaceCall = {
      caller: request.caller,
      body: request.body,
      rawBody: request.rawBody,
      notes,
      pathModel: model,
      pathStream: mode === false ? undefined : mode,
      callingAs: () => ({ owner: request.caller, principal: principalSnapshot(request.principal ?? ADMIN) }),
      principal: () => request.principal ?? ADMIN,
      requestId: request.id,
      publicOrigin: () => publicOrigin(request),
    };
    const translated = surface.toChat(request.body, surfaceCall);
    const body = translated instanceof Promise ? await translated : translated;
    if (notes.dropped) {
      request.droppedFields = notes.dropped;
      void reply.header(DROPPED_FIELDS_HEADER, notes.dropped.join(', '));
    }
    request.streamed = mode !== false;
    if (body instanceof NativeForward)
      return forwardNatively(body, { ...forward, call: surfaceCall, mode }, request, reply, deps);
    request.chatModel = body.model;
    checkConversation(body);
    authorizeModel(request.principal ?? ADMIN, body.model, chat.canonicalModel(body.model));
    if (beginTrace) request.trace = beginTrace(request);
    // The caller's bytes go on only when the translation kept its body (a chat request with file_search is changed).
    const raw = surface.forwardsRawBody && body === request.body ? request.rawBody : undefined;
    const call = callInputOf(request, reply, raw);
    const recording = recorderOf(request, reply, before, body.model, call);
    const { loop } = surfaceCall;
    const recorder = recording instanceof Promise ? await recording : recording;
    if (recorder === 'answered') return reply;
    try {
      if (body.stream === true) {
        const started = await (loop ? loop.stream(chat, body, call) : chat.stream(body, call));
        return await streamAnswer(
          request,
          reply,
          started,
          { encoder: surface.encoder(surfaceCall), bodyLimitBytes, captureAnswer, mode },
          recorder && { recorder, isCompleteEnd: surface.isCompleteEnd },
        );
      }
      const { result, headers, upstream, usage } = await (loop
        ? loop.complete(chat, body, call)
        : chat.complete(body, call));
      request.upstreamName = upstream;
      request.usage = usage;
      if (captureAnswer) request.answerText = answerTextOf(result.body)?.slice(0, MAX_CAPTURED_ANSWER_CHARS);
      const translatedAnswer = surface.answer(result.body, surfaceCall);
      const answer = translatedAnswer instanceof Promise ? await translatedAnswer : translatedAnswer;
      return sendRecordedAnswer(request, reply, recorder, headers, answer);
    } catch (error) {
      if (recorder) await idempotency.settleError(recorder, error, request.responseType);
      throw error;
    }
  };
  // Named for its surface (`responsesCall`, `geminiCall`, …), so a stack trace or a route listing says whose call it is.
  Object.defineProperty(handler, 'name', { value: `${descriptor.route}Call` });
  return handler;
}

/** What keys a surface's answers for replay and the cache: its route and cache rule, and its URL's part. */
export function answerKeyOf(descriptor: SurfaceDescriptor): AnswerKey {
  const { cacheable, keyOf } = descriptor.cache;
  return { rule: { route: descriptor.route, cacheable }, ...(keyOf ? { keyOf } : {}) };
}

/** What the pipeline works with (one set per API surface). */
export interface PipelineDeps {
  chat: ChatService;
  idempotency: CallIdempotency;
  bodyLimitBytes: number;
  /** Keep the answer text for webhook subscriptions that opted in to content. */
  captureAnswer?: boolean;
  beginTrace: ((request: FastifyRequest) => RequestTrace) | undefined;
  /** The exact response cache (absent: nothing is cached). */
  cache?: ResponseCache;
}

interface ForwardSpec {
  surface: ApiSurface;
  /** What answers the call before it runs, and keys its answer. */
  before: AnsweredBefore;
  /** The upstream API that takes the request as it is, and its admission estimate (the surface's descriptor). */
  native?: SurfaceDescriptor['native'];
}

/**
 * A request its surface forwards natively (the Responses API to OpenAI, for what only it has): the same rights,
 * trace, call, Idempotency-Key and records as a translated call; the upstream's JSON or events pass through, once
 * the caller is recorded as the owner of the ids they name (the answer, or the event naming them, waits for that).
 */
async function forwardNatively(
  native: NativeForward,
  {
    surface,
    before,
    native: spec,
    call: surfaceCall,
    mode,
  }: ForwardSpec & { call: SurfaceCall; mode: StreamMode | false },
  request: FastifyRequest,
  reply: FastifyReply,
  deps: PipelineDeps,
): Promise<FastifyReply> {
  const { chat, idempotency } = deps;
  // A translation forwards natively only where its descriptor names the native API.
  if (!spec) throw new Error(`the ${surface.route} surface forwarded natively but its descriptor names no native API`);
  const { model } = native;
  request.chatModel = model;
  authorizeModel(request.principal ?? ADMIN, model, chat.canonicalModel(model));
  if (deps.beginTrace) request.trace = deps.beginTrace(request);
  const call = callInputOf(request, reply, native.unchanged ? request.rawBody : undefined);
  if (native.asChat) await chat.checkContextWindow(native.asChat, call.client);
  const forwardHeaders = pickHeaders(request, surface.nativeHeaders);
  if (forwardHeaders) call.forwardHeaders = forwardHeaders;
  const forwardQuery = pickQuery(request, surface.nativeQuery);
  if (forwardQuery) call.forwardQuery = forwardQuery;
  const recording = recorderOf(request, reply, before, model, call);
  const recorder = recording instanceof Promise ? await recording : recording;
  if (recorder === 'answered') return reply;
  try {
    const answered = await chat.forwardNative(spec.api, native.body, call, spec.estimate(native.body));
    const { ownNative } = surface;
    const own = ownNative && ((ids: readonly string[]) => ownNative(ids, surfaceCall));
    if ('chunks' in answered) {
      const encoder = surface.nativeEncoder?.(surfaceCall) as StreamEncoder;
      const started = own ? await ownedStream(answered, own) : answered;
      return await streamAnswer(
        request,
        reply,
        started,
        { encoder, bodyLimitBytes: deps.bodyLimitBytes, captureAnswer: false, mode, openAtOnce: true },
        recorder && { recorder, isCompleteEnd: surface.isCompleteEnd },
      );
    }
    if (own && answered.result.serverIds) await own(answered.result.serverIds);
    request.upstreamName = answered.upstream;
    request.usage = answered.usage;
    await recorder?.json(200, { 'content-type': request.responseType }, answered.result.body.toString('utf8'));
    return reply.headers(answered.headers).type(request.responseType).send(answered.result.body);
  } catch (error) {
    if (recorder) await idempotency.settleError(recorder, error, request.responseType);
    throw error;
  }
}

/**
 * A forwarded stream whose batches go on only once the ids they name are recorded as the caller's (at most a few
 * events of a stream name any: `response.created`, the final event).
 */
async function ownedStream(
  started: StartedStream,
  own: (ids: readonly string[]) => Promise<void>,
): Promise<StartedStream> {
  const ownIn = (batch: StreamBatch): Promise<void> | undefined => {
    let ids: string[] | undefined;
    for (const item of batch) if (item.serverIds) (ids ??= []).push(...item.serverIds);
    return ids && own(ids);
  };
  if (started.first.done !== true) await ownIn(started.first.value);
  const source = started.chunks;
  const chunks: AsyncIterator<StreamBatch> = {
    async next() {
      const next = await source.next();
      const owning = next.done === true ? undefined : ownIn(next.value);
      if (owning) await owning;
      return next;
    },
    return: async (value?: unknown) => (source.return ? source.return(value) : { done: true, value: undefined }),
  };
  return { ...started, chunks };
}

interface StreamOptions {
  encoder: StreamEncoder;
  bodyLimitBytes: number;
  captureAnswer: boolean;
  /** The stream's form (its descriptor's): SSE, or a JSON array written as it comes. */
  mode: StreamMode | false;
  /**
   * Open the stream with its first read, whatever it holds: a forwarded stream's events pass through as they came,
   * each after the opening frames (a JSON array's `[`). A translated stream's opening waits for the model (`open`).
   */
  openAtOnce?: boolean;
}

/** A JSON-array stream's content type (Google's streamGenerateContent without `alt=sse`). */
const JSON_ARRAY_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Streams an answer. Nothing is sent until the first chunk arrives, so an upstream that fails before it answers
 * still gets a proper JSON error with its own status. After that the status is committed: a failure becomes one
 * final error frame in the API's shape (chat's `event: error`) and the stream ends WITHOUT `[DONE]`, so a client
 * never mistakes a cut answer for a complete one. The frames are pulled only when the socket has room, so a slow
 * client stalls the upstream read (TCP backpressure) instead of growing memory (src/http/sse-writer.ts). A
 * JSON-array stream (`mode`) goes out as application/json, the same way.
 */
async function streamAnswer(
  request: FastifyRequest,
  reply: FastifyReply,
  started: StartedStream,
  options: StreamOptions,
  replay: { recorder: AnswerRecorder; isCompleteEnd: (frame: string) => boolean } | undefined,
): Promise<FastifyReply> {
  request.upstreamName = started.upstream;
  request.firstByteMs = Math.round((performance.now() - request.receivedAt) * 100) / 100;
  void reply.headers(started.headers).headers(SSE_HEADERS);
  const contentType = options.mode === 'json-array' ? JSON_ARRAY_CONTENT_TYPE : SSE_HEADERS['content-type'];
  if (options.mode === 'json-array') void reply.header('content-type', contentType);
  const frames = sseFrames(started, request, options, reply.statusCode);
  await writeEventStream(
    reply,
    replay ? recordStream(frames, replay.recorder, replay.isCompleteEnd, contentType) : frames,
  );
  return reply;
}

async function* sseFrames(
  started: StartedStream,
  request: FastifyRequest,
  options: StreamOptions,
  status: number,
): AsyncGenerator<string> {
  const { chunks, scope, first } = started;
  const { encoder, captureAnswer } = options;
  let finished = false;
  let usage: Usage | undefined;
  let failure: GatewayError | ClientGoneError | undefined;
  let answer = '';
  // Completion characters sent on: a stream cut before its usage is charged at least these (admission-estimate.ts).
  let delivered = 0;
  // Frames produced and not yet written: when a later chunk of the same read fails, they still go out first.
  let frames = '';
  // Set while the surface translates: a throw then is the translation's, not the upstream stream's.
  let translating = false;
  let settled = false;
  // The call ends here, however it ended, once: its lease, circuit permit, capacity slot, attempt report and trace span.
  const settle = () => {
    if (settled) return;
    settled = true;
    // Stopped early with no error of its own: the reader went away (a slow reader's socket closed while this
    // generator waited at a yield ends here too, without any abort reaching the upstream call first).
    if (!finished && failure === undefined) failure = new ClientGoneError();
    if (captureAnswer) request.answerText = answer.slice(0, MAX_CAPTURED_ANSWER_CHARS);
    request.usage = started.call.settle(usage, failure, translating ? 'translation' : 'upstream', delivered);
  };
  // The opening frames wait for the first chunk that names the answering model or says something (StreamEncoder.open).
  let opened = false;
  const open = (model: string | undefined): string => {
    opened = true;
    return encoder.open(model);
  };
  try {
    let next = first;
    if (options.openAtOnce === true) frames = open(undefined);
    while (next.done !== true) {
      // One upstream read's chunks leave as one write: a burst of chunks is one write, not one per chunk. Reading
      // and checking each chunk, not writing it, is what a chunk costs (docs/benchmarks.md).
      translating = true;
      for (const item of next.value) {
        usage = item.usage ?? item.chunk.usage ?? usage;
        if (item.internal !== true) delivered += deliveredChars(item.chunk);
        if (captureAnswer && answer.length < MAX_CAPTURED_ANSWER_CHARS) answer += deltaText(item.chunk);
        if (!opened && opens(item)) frames += open(namedModel(item.chunk));
        frames += encoder.chunk(item);
      }
      translating = false;
      if (frames !== '') yield frames;
      frames = '';
      next = await chunks.next();
    }
    translating = true;
    const opening = opened ? '' : open(undefined);
    const end = encoder.end(usage);
    const last = opening + (end instanceof Promise ? await end : end);
    translating = false;
    finished = true;
    // The answer gate (docs/usage.md, "Durability"): the request's record is made, and durable, before its last frame.
    settle();
    await answerGate(request, status);
    if (last !== '') yield last;
  } catch (error) {
    if (error instanceof ClientGoneError || scope.signal.reason instanceof ClientGoneError) return; // `finally` records it
    const gatewayError = toGatewayError(error, options.bodyLimitBytes);
    failure = gatewayError;
    request.errorCode = gatewayError.code;
    request.errorDetails = gatewayError.details;
    if (gatewayError.code === 'internal_error')
      request.log.error({ err: error, code: gatewayError.code }, 'stream failed after it started: unexpected error');
    else request.log.warn({ code: gatewayError.code, details: gatewayError.details }, 'stream failed after it started');
    settle();
    await answerGate(request, status);
    // The events already produced (earlier chunks of this read, and what the failing one made before it threw), then
    // the one terminal error frame.
    yield frames + (opened ? '' : open(undefined)) + encoder.fail(gatewayError, request.errorShape);
  } finally {
    settle();
    await started.call.leaseReturned;
    if (!finished) await chunks.return?.();
    if (failure instanceof ClientGoneError) endClientGone(request);
  }
}

/** Whether a chunk opens the caller's stream: it names the answering model, or it carries a choice the caller sees. */
function opens(item: StreamChunk): boolean {
  return namedModel(item.chunk) !== undefined || (item.internal !== true && item.chunk.choices.length > 0);
}

/** The model a chunk names (an empty name is none: Azure's content-filter chunk says `"model": ""`). */
function namedModel(chunk: StreamChunk['chunk']): string | undefined {
  return typeof chunk.model === 'string' && chunk.model !== '' ? chunk.model : undefined;
}

/** Ends the request and resolves once its record is durable (http/request-end.ts `endBeforeAnswer`). */
function answerGate(request: FastifyRequest, status: number): Promise<void> {
  return new Promise((resolve) => endBeforeAnswer(request, status, resolve));
}

/** The first choice's text of a `chat.completion` body (for webhook subscriptions that opted in to content). */
function answerTextOf(body: Buffer): string | undefined {
  try {
    const content = (JSON.parse(body.toString('utf8')) as { choices?: Array<{ message?: { content?: unknown } }> })
      .choices?.[0]?.message?.content;
    return typeof content === 'string' ? content : undefined;
  } catch {
    return undefined;
  }
}

function deltaText(chunk: StreamChunk['chunk']): string {
  const content = chunk.choices[0]?.delta.content;
  return typeof content === 'string' ? content : '';
}
