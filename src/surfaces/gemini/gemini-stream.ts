import { GatewayError } from '../../errors/gateway-error.js';
import { SSE_HEADERS } from '../../http/sse.js';
import type { StreamChunk, Usage } from '../../providers/provider-contract.js';
import type { GeminiCandidate, GeminiGenerateResponse, GeminiPart, GeminiUsageMetadata } from '../../wire/gemini.js';
import { withGeminiError } from '../../wire/gemini.js';
import { geminiFinishReasonOf } from '../../wire/gemini-values.js';
import type { StreamEncoder } from '../surface.js';
import { cutShort, MAX_STREAMED_ARGUMENTS_CHARS, toolCallFields } from '../tool-arguments.js';
import { answerCallId, functionCallPart, geminiUsage, type GeminiAnswerIds } from './chat-to-gemini.js';

/**
 * The two forms of `:streamGenerateContent`: `alt=sse` (what the SDKs and Gemini CLI ask for), an event stream whose
 * every event is one `data:` line holding a GenerateContentResponse; and, without `alt`, one JSON array written as
 * it goes (`[`, the responses separated by `,\r\n`, `]`), which curl users and the REST docs read.
 */
export type GeminiStreamMode = 'sse' | 'json-array';

/** A stream encoder of the Gemini surface: its frames, and the content type they go out as. */
export interface GeminiStreamEncoder extends StreamEncoder {
  readonly contentType: string;
}

export const GEMINI_CONTENT_TYPES: Readonly<Record<GeminiStreamMode, string>> = {
  sse: SSE_HEADERS['content-type'],
  'json-array': 'application/json; charset=utf-8',
};

/** The most tool calls one stream may make (a hostile upstream could name a new one in every piece). */
export const MAX_STREAMED_CALLS = 1024;

/**
 * Whether a frame holds a response with a finish reason: the end of a stream that ended well, in both forms and
 * on both paths (Gemini writes no end marker; its last response has the finish reason, and a failure never does).
 * In JSON, a key is the only place the quoted name can appear unescaped.
 */
export function isGeminiCompleteEnd(frame: string): boolean {
  return /"finishReason"\s*:/.test(frame);
}

/**
 * How one stream's responses are framed. A failure is one more response, `{code, message, details, error}`
 * (wire/gemini.ts `withGeminiError`): the SDKs raise an ApiError with `error.code` as its status for it; in an event
 * stream it is a `data:` line like every event (an `event:` line would make both SDKs drop or stall on it), in the
 * JSON array its last element. Then the stream ends.
 */
export class GeminiFramer {
  private written = false;

  constructor(readonly mode: GeminiStreamMode) {}

  open(): string {
    return this.mode === 'json-array' ? '[' : '';
  }

  /** One response (JSON on one line). */
  event(json: string): string {
    if (this.mode === 'sse') return `data: ${json}\r\n\r\n`;
    const frame = this.written ? `,\r\n${json}` : json;
    this.written = true;
    return frame;
  }

  close(): string {
    return this.mode === 'json-array' ? ']' : '';
  }

  fail(error: GatewayError): string {
    return this.event(JSON.stringify(withGeminiError(error.toBody(), error.status, error.headers))) + this.close();
  }
}

interface OpenCall {
  id: string;
  name: string;
  args: string;
}

/**
 * One Gemini stream from chat chunks (a state machine per stream). Each chunk's new text goes out at once as a
 * response of its own, one candidate per chat choice that said something. Tool calls are gathered (bounded: at most
 * MAX_STREAMED_CALLS calls and MAX_STREAMED_ARGUMENTS_CHARS characters of arguments) and go out whole, as Gemini
 * sends them, in the last response: with each candidate's finish reason, the usage as `usageMetadata`, and, when a
 * candidate called nothing, the empty text part Gemini's last responses carry. Every response repeats `responseId`
 * and `modelVersion`.
 */
export class GeminiStream implements GeminiStreamEncoder {
  readonly contentType: string;
  private readonly framer: GeminiFramer;
  private readonly calls = new Map<number, Map<number, OpenCall>>();
  private readonly finishes = new Map<number, string>();
  private callCount = 0;
  private argsChars = 0;
  private model: string;

  constructor(
    private readonly ids: GeminiAnswerIds,
    mode: GeminiStreamMode,
  ) {
    this.framer = new GeminiFramer(mode);
    this.contentType = GEMINI_CONTENT_TYPES[mode];
    this.model = ids.model;
  }

  open(): string {
    return this.framer.open();
  }

  chunk(item: StreamChunk): string {
    if (item.internal === true) return '';
    if (typeof item.chunk.model === 'string' && item.chunk.model !== '') this.model = item.chunk.model;
    const candidates: GeminiCandidate[] = [];
    for (const choice of item.chunk.choices) {
      const index = typeof choice.index === 'number' ? choice.index : 0;
      const { content, tool_calls: calls } = choice.delta;
      if (typeof content === 'string' && content !== '')
        candidates.push({ content: { role: 'model', parts: [{ text: content }] }, index });
      if (Array.isArray(calls)) for (const piece of calls) this.toolCall(index, piece);
      if (typeof choice.finish_reason === 'string') this.finishes.set(index, choice.finish_reason);
    }
    return candidates.length > 0 ? this.response(candidates) : '';
  }

  end(usage: Usage | undefined): string {
    const indexes = [...new Set([...this.finishes.keys(), ...this.calls.keys()])].sort((a, b) => a - b);
    const candidates = (indexes.length > 0 ? indexes : [0]).map((index): GeminiCandidate => {
      const reason = this.finishes.get(index);
      const cut = cutShort(reason);
      const calls = [...(this.calls.get(index)?.values() ?? [])].map((call) =>
        functionCallPart({ id: call.id, name: call.name, arguments: call.args }, cut),
      );
      const parts: GeminiPart[] = calls.length > 0 ? calls : [{ text: '' }];
      return { content: { role: 'model', parts }, finishReason: geminiFinishReasonOf(reason), index };
    });
    return this.response(candidates, geminiUsage(usage)) + this.framer.close();
  }

  fail(error: GatewayError): string {
    return this.framer.fail(error);
  }

  private response(candidates: GeminiCandidate[], usageMetadata?: GeminiUsageMetadata): string {
    const response: GeminiGenerateResponse = usageMetadata ? { candidates, usageMetadata } : { candidates };
    response.modelVersion = this.model;
    response.responseId = this.ids.responseId;
    return this.framer.event(JSON.stringify(response));
  }

  private toolCall(candidate: number, piece: unknown): void {
    const fields = toolCallFields(piece);
    if (!fields) return;
    const index = fields.index ?? 0;
    let open = this.calls.get(candidate);
    if (!open) this.calls.set(candidate, (open = new Map()));
    let call = open.get(index);
    if (!call) {
      if (++this.callCount > MAX_STREAMED_CALLS) throw tooMuch(`more than ${MAX_STREAMED_CALLS} function calls`);
      call = {
        id: fields.id ?? answerCallId(this.ids.responseId, candidate, index),
        name: fields.name ?? '',
        args: '',
      };
      open.set(index, call);
    } else if (call.name === '' && fields.name !== undefined) call.name = fields.name;
    const args = fields.arguments;
    if (args === undefined || args === '') return;
    this.argsChars += args.length;
    if (this.argsChars > MAX_STREAMED_ARGUMENTS_CHARS)
      throw tooMuch(`function call arguments over ${MAX_STREAMED_ARGUMENTS_CHARS} characters`);
    call.args += args;
  }
}

function tooMuch(reason: string): GatewayError {
  return new GatewayError('upstream_invalid_response', { reason: `the stream made ${reason}` });
}

/**
 * The encoder of a stream forwarded from a Gemini upstream: each of its responses passed on as it came (re-written
 * on one line when the upstream spread it over several `data:` lines), in the form the caller asked for; a failure
 * after the first is the surface's failure frame.
 */
export function geminiPassthroughEncoder(mode: GeminiStreamMode): GeminiStreamEncoder {
  const framer = new GeminiFramer(mode);
  return {
    contentType: GEMINI_CONTENT_TYPES[mode],
    open: () => framer.open(),
    chunk: (item) => (item.json === undefined || item.internal === true ? '' : framer.event(oneLine(item.json))),
    end: () => framer.close(),
    fail: (error) => framer.fail(error),
  };
}

function oneLine(json: string): string {
  return json.includes('\n') || json.includes('\r') ? JSON.stringify(JSON.parse(json)) : json;
}
