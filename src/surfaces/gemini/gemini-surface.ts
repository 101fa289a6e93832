import { randomBytes } from 'node:crypto';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ChatRequestBody } from '../../providers/provider-contract.js';
import type { GeminiGenerateRequest } from '../../wire/gemini.js';
import { NativeForward, type ApiSurface, type SurfaceCall } from '../surface.js';
import { completionToGemini, type GeminiAnswerIds } from './chat-to-gemini.js';
import {
  GeminiStream,
  geminiPassthroughEncoder,
  isGeminiCompleteEnd,
  type GeminiStreamEncoder,
  type GeminiStreamMode,
} from './gemini-stream.js';
import { geminiToChat } from './request-to-chat.js';

/** The actions of `POST .../models/{model}:<action>`. */
export type GeminiAction =
  'generateContent' | 'streamGenerateContent' | 'countTokens' | 'embedContent' | 'batchEmbedContents';

const ACTIONS: ReadonlySet<string> = new Set<GeminiAction>([
  'generateContent',
  'streamGenerateContent',
  'countTokens',
  'embedContent',
  'batchEmbedContents',
]);

/** The longest model name a Gemini path may carry (the config's own limit on a model id). */
const MAX_MODEL_CHARS = 256;

/** What a Gemini URL says: the model, the action, and for a stream its form. */
export interface GeminiUrlCall {
  model: string;
  action: GeminiAction;
  /** `:streamGenerateContent` only: `alt=sse`, else (no `alt`, or `alt=json`) the JSON array. */
  stream?: GeminiStreamMode;
}

/**
 * The last segment of a Gemini path (`gemini-2.5-flash:streamGenerateContent`: the model, a colon, the action) and
 * its `alt` query, or undefined when the segment is not a model and an action this surface serves. An `alt` other
 * than `sse` or `json` is a 400 naming it.
 */
export function geminiCallOf(segment: string, alt: unknown): GeminiUrlCall | undefined {
  const at = segment.lastIndexOf(':');
  if (at <= 0 || at > MAX_MODEL_CHARS) return undefined;
  const action = segment.slice(at + 1);
  if (!ACTIONS.has(action)) return undefined;
  const call: GeminiUrlCall = { model: segment.slice(0, at), action: action as GeminiAction };
  if (call.action !== 'streamGenerateContent') return call;
  if (alt === 'sse') call.stream = 'sse';
  else if (alt === undefined || alt === 'json') call.stream = 'json-array';
  else
    throw new GatewayError('invalid_query_parameter', {
      parameter: 'alt',
      problem: 'must be sse (an event stream) or json (one JSON array), given once',
    });
  return call;
}

interface GeminiCallState {
  ids: GeminiAnswerIds;
  mode: GeminiStreamMode | undefined;
}

/** A response id as Gemini writes them: 16 random bytes, base64url (22 characters). */
export function newResponseId(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * Google's Gemini API as a surface of the chat pipeline. The model and whether (and how) the answer streams are the
 * URL's (`SurfaceCall.pathModel`, `pathStream`), not the body's. To a model served by Gemini the request is
 * forwarded as it is (thought signatures, safety settings, Google's own tools untouched): a `NativeForward` whose
 * body also carries `model` and `stream` for the pipeline (they are not Gemini fields: the bytes sent are the
 * caller's). To any other, it is translated into a chat request (request-to-chat.ts), and the chat answer back into
 * a GenerateContentResponse (chat-to-gemini.ts) or a stream of them (gemini-stream.ts).
 */
export function geminiSurface(
  forwards: (model: string) => boolean,
  responseId: () => string = newResponseId,
): ApiSurface {
  return {
    route: 'gemini',
    forwardsRawBody: false,
    nativeEncoder: (call?: SurfaceCall): GeminiStreamEncoder => geminiPassthroughEncoder(modeOf(call) ?? 'sse'),
    toChat(body, call): ChatRequestBody | NativeForward {
      const model = call.pathModel;
      if (model === undefined)
        throw new Error('the Gemini surface serves a call whose URL names the model (SurfaceCall.pathModel)');
      const request = body as GeminiGenerateRequest;
      const mode = call.pathStream;
      call.state = { ids: { responseId: responseId(), model }, mode } satisfies GeminiCallState;
      const stream = mode !== undefined;
      if (forwards(model)) return new NativeForward({ ...request, model, stream }, true, countable(request, model));
      return geminiToChat(request, model, { stream, notes: call.notes });
    },
    answer(completion, call) {
      return JSON.stringify(completionToGemini(completion.toString('utf8'), stateOf(call).ids));
    },
    encoder(call): GeminiStreamEncoder {
      const state = stateOf(call);
      return new GeminiStream(state.ids, state.mode ?? 'sse');
    },
    isCompleteEnd: isGeminiCompleteEnd,
  };
}

function stateOf(call: SurfaceCall): GeminiCallState {
  return call.state as GeminiCallState;
}

/** The form a forwarded stream goes out in: the URL's (the state toChat kept, else the call's own). */
function modeOf(call: SurfaceCall | undefined): GeminiStreamMode | undefined {
  return (call?.state as GeminiCallState | undefined)?.mode ?? call?.pathStream;
}

/**
 * The request as chat for the context-window check (no notes: nothing is dropped from a forwarded request); undefined
 * when it holds what chat cannot express (Gemini checks such a request itself).
 */
function countable(request: GeminiGenerateRequest, model: string): ChatRequestBody | undefined {
  try {
    return geminiToChat(request, model);
  } catch {
    return undefined;
  }
}

/**
 * What admission counts of a request forwarded to Gemini, before any upstream call: its prompt estimated as for the
 * other native APIs (a token per four characters of its contents, system instruction and tools), and its maximum
 * output (`generationConfig.maxOutputTokens`, for each of `candidateCount` candidates).
 */
export function geminiNativeEstimate(body: GeminiGenerateRequest): {
  prompt: number;
  maxTokens: number | undefined;
  n?: number;
} {
  const size =
    JSON.stringify(body.contents ?? '').length +
    JSON.stringify(body.systemInstruction ?? '').length +
    JSON.stringify(body.tools ?? '').length;
  const max = body.generationConfig?.maxOutputTokens;
  const candidates = body.generationConfig?.candidateCount;
  return {
    prompt: Math.ceil(size / 4),
    maxTokens: typeof max === 'number' ? max : undefined,
    ...(typeof candidates === 'number' ? { n: candidates } : {}),
  };
}
