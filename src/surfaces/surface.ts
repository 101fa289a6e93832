import type { GatewayError } from '../errors/gateway-error.js';
import { formatEvent } from '../http/sse.js';
import type { ErrorShape } from '../request/request-state.js';
import type { ChatRequestBody, NativeBody, StreamChunk, Usage } from '../providers/provider-contract.js';
import type { TranslationNotes } from './translation-notes.js';
import type { CallingAs } from '../core/pipeline/call-as.js';
import type { Principal } from '../auth/principal.js';
import type { ToolLoop } from './tool-loop.js';

/**
 * A request the surface does not translate: forwarded as it is to an upstream that speaks its API natively. A class,
 * so no body (whose unknown fields pass through) can pass for one.
 */
export class NativeForward {
  constructor(
    readonly body: NativeBody,
    /** Whether `body` is the caller's body unchanged (then its bytes are sent as they came). */
    readonly unchanged: boolean,
    /** The request as chat, when it translates: what the context-window check counts (it is not sent). */
    readonly asChat?: ChatRequestBody,
    /** The model it names (the body's; a surface whose model is in its path names it here). */
    readonly model: string = body.model,
  ) {}
}

/**
 * How one public API (chat completions, the Responses API) speaks to callers: a thin translation at the edge of
 * the one model-call pipeline (routes/surface-call.ts, core/pipeline/call-pipeline.ts). The surface turns its request into the chat request every provider
 * serves, and the chat answer back into its own JSON or its own event stream; auth, limits, idempotency,
 * retries and records are the pipeline's, the same for every surface.
 */
export interface ApiSurface {
  /** The route whose rights, limits and records apply (and which scopes an Idempotency-Key): its descriptor's. */
  readonly route: string;
  /** Whether the caller's bytes are a chat request the provider may forward untouched (false when translated). */
  readonly forwardsRawBody: boolean;
  /** The chat request a validated body stands for (the body itself for chat), or a request to forward natively. */
  toChat(
    body: unknown,
    context: SurfaceCall,
  ): Promise<ChatRequestBody | NativeForward> | ChatRequestBody | NativeForward;
  /** The caller's JSON answer from a `chat.completion`'s bytes (the bytes themselves for chat). */
  answer(completion: Buffer, context: SurfaceCall): Promise<Buffer | string> | Buffer | string;
  /** A fresh encoder for one stream. */
  encoder(context: SurfaceCall): StreamEncoder;
  /** The encoder of a natively forwarded stream (the upstream's events passed through, in the call's stream form). */
  nativeEncoder?(call: SurfaceCall): StreamEncoder;
  /**
   * Records the caller as the owner of the ids a natively forwarded answer named (surfaces/native-ownership.ts), so
   * that only it may refer to them again. Never rejects; the pipeline awaits it before the answer (or the event
   * naming them) goes out, so the caller cannot refer to an id before it is recorded.
   */
  readonly ownNative?: (ids: readonly string[], call: SurfaceCall) => Promise<void>;
  /** Caller headers a natively forwarded request carries upstream (lower-case names). */
  readonly nativeHeaders?: readonly string[];
  /** Query parameters of the caller's URL a natively forwarded request carries upstream. */
  readonly nativeQuery?: readonly string[];
  /** Whether `frame` is the last frame of a stream that ended well (a replay stores only those). */
  isCompleteEnd(frame: string): boolean;
}

/** What a surface knows of the call it serves (the caller, to keep what is theirs apart; the original body). */
export interface SurfaceCall {
  readonly caller: string;
  readonly body: unknown;
  /** The body's text as it came (what the body limit counted), when the pipeline has it. */
  readonly rawBody?: string | undefined;
  /**
   * The model the call names, as its descriptor reads it (`modelOf`): the body's, or the URL's for an API that puts
   * it there (Gemini: `/v1beta/models/{model}:generateContent`), which its translation reads here.
   */
  readonly pathModel?: string;
  /**
   * How the call streams, as its descriptor reads it (`streamOf`): the body's `stream`, or the URL's for an API that
   * says it there (Gemini: `:streamGenerateContent`, `alt=sse` or not); absent: one JSON answer.
   */
  readonly pathStream?: 'sse' | 'json-array';
  /** Per-call state a surface keeps between toChat and its answer (the Responses surface: the response id). */
  state?: unknown;
  /**
   * Where a translation notes the fields it left out (or, for a model with `translation: strict`, refuses them);
   * the pipeline names them in X-Gateway-Dropped-Fields and the access line. Absent: nothing may be dropped.
   */
  readonly notes?: TranslationNotes;
  /** Who the call is made as (a tool the gateway runs for it acts as the caller: file_search); absent: no caller. */
  readonly callingAs?: () => CallingAs;
  /** The caller's principal (its MCP tool rights: a model's MCP tool loop calls tools as the caller). */
  readonly principal?: () => Principal;
  /** The request's id (the record of each tool call the gateway makes for it names it). */
  readonly requestId?: string;
  /** The gateway's public origin for this call (`https://gw.example`), for links an answer carries. */
  readonly publicOrigin?: () => string;
  /**
   * Set by a translation whose request is answered in several model turns, with a tool the gateway runs between
   * them (file_search, MCP tools): the route runs the turns through it instead of one chat call.
   */
  loop?: ToolLoop;
}

/** What a descriptor reads of a request besides its headers: the validated body, the path's parameters, the query. */
export interface SurfaceRequest {
  readonly body: unknown;
  readonly params: unknown;
  readonly query: unknown;
}

/**
 * The encoder of a natively forwarded stream: the upstream's events go out as they came (scrubbed by the provider);
 * a failure after the first is the one frame `failFrame` writes, in the API's own error shape.
 */
export function passthroughEncoder(failFrame: (error: GatewayError) => string): StreamEncoder {
  return {
    open: () => '',
    chunk: (item) => (item.event === undefined ? '' : formatEvent(item.json ?? '{}', { event: item.event })),
    end: () => '',
    fail: failFrame,
  };
}

/**
 * Turns a stream's chat chunks into the surface's SSE frames. Strings only: the pipeline batches them into one
 * socket write per upstream read, and keeps the copy an Idempotency-Key replays.
 */
export interface StreamEncoder {
  /**
   * Frames sent before the first chunk's ('' for chat; Responses: `response.created`, `response.in_progress`). Called
   * once: for a translated stream when the first chunk that names the answering model or carries a choice arrived
   * (or at the end, or on a failure, when none did), chunks before it carrying neither (an Azure content-filter
   * chunk, a usage-only chunk); for a forwarded one with its first read. `model` is the model that chunk names,
   * undefined when it names none: an answer names the model the upstream says answered (docs/compatibility.md,
   * "Which model an answer names"), its opening event as its JSON twin.
   */
  open(model?: string): string;
  /** The frames of one chunk (chunks marked `internal` carry only usage and must produce nothing visible). */
  chunk(item: StreamChunk): string;
  /** The frames of a stream that ended well: chat's `[DONE]`, the Responses API's closing events. */
  end(usage: Usage | undefined): Promise<string> | string;
  /** The one final frame of a stream that failed after it started (never a success marker), in `shape` when it follows the path's. */
  fail(error: GatewayError, shape: ErrorShape): string;
}
