import { randomUUID } from 'node:crypto';
import { GatewayError, isGatewayError } from '../../errors/gateway-error.js';
import { completionJson } from '../completion-json.js';
import { KeyScrubber } from '../../secrets/key-scrubber.js';
import type { NativeLineResult } from '../provider-contract.js';
import { mapUpstreamHttpError } from '../upstream-http-error.js';
import { indexOfCustomId } from '../batch-api.js';
import { httpStatusOfRpc, type GeminiInlinedResponse, type GeminiRpcStatus } from '../../wire/gemini-batch.js';
import { isJsonObject, received, type Received } from '../../wire/received.js';
import { fromGeminiResponse } from './translate-response.js';

/** What every result of one batch is translated with. */
export interface ResultContext {
  upstream: string;
  /** The batch's upstream model (`metadata.model` without `models/`): the answer's model when it names none. */
  model: string;
  secrets: ReadonlyArray<string | undefined>;
}

/**
 * The line an answer belongs to: its key (`line-<index>`, the key the gateway sent) when it echoes one, else its
 * position (Google answers in request order, and may leave the metadata out: the gateway sends every line of a
 * batch in index order, 0 to n-1). A key the gateway did not write: no line (its line ends as unanswered).
 */
export function indexOf(key: unknown, position: number): number | undefined {
  if (key === undefined) return position;
  return indexOfCustomId(key);
}

/**
 * One answer of an ended batch (inline, or a line of its responses file) as the line's chat endpoint would have
 * answered: a `chat.completion` (200), or the error in the gateway's `{code, message, details}` shape with its status.
 * Whatever the answer holds, this returns a result: never throws.
 */
export function chatLineResult(index: number, answer: unknown, context: ResultContext): NativeLineResult {
  const item = received<GeminiInlinedResponse>(answer);
  if (!item) return failed(index, invalid(context, 'a result is not a JSON object'));
  if (item.error !== undefined) return failed(index, rpcError(item.error, context));
  const response = item.response;
  const requestId = requestIdOf(isJsonObject(response) ? response.responseId : undefined);
  try {
    const translated = fromGeminiResponse(response, {
      upstreamModel: context.model,
      upstream: context.upstream,
      id: `chatcmpl-${randomUUID()}`,
      created: Math.floor(Date.now() / 1000),
      secrets: context.secrets,
    });
    if (!translated) return failed(index, invalid(context, 'a result has no candidates array'), requestId);
    const json = completionJson(translated.completion);
    return {
      index,
      status: 200,
      // Never the batch's key, which the answer may repeat (key-scrubber.ts).
      body: KeyScrubber.of(context.secrets)?.scrub(json) ?? json,
      usage: translated.usage,
      requestId,
    };
  } catch (error) {
    // A blocked prompt (upstream_content_blocked), as the interactive call would answer it.
    return failed(index, isGatewayError(error) ? error : invalid(context, 'a result cannot be read'), requestId);
  }
}

function failed(index: number, error: GatewayError, requestId: string | null = null): NativeLineResult {
  return { index, status: error.status, body: JSON.stringify(error.toBody()), usage: undefined, requestId };
}

function invalid(context: ResultContext, reason: string): GatewayError {
  return new GatewayError('upstream_invalid_response', { upstream: context.upstream, reason });
}

/** A line's google.rpc.Status as the error its own call would have had (its gRPC code as the HTTP status). */
function rpcError(error: unknown, context: ResultContext): GatewayError {
  const status: Received<GeminiRpcStatus> = received<GeminiRpcStatus>(error) ?? {};
  return mapUpstreamHttpError({
    upstream: context.upstream,
    status: httpStatusOfRpc(status.code),
    bodyText: JSON.stringify({ error: { code: status.code, message: status.message } }),
    retryAfter: undefined,
    keyFromCaller: false,
    secrets: context.secrets,
  });
}

/** Gemini's `responseId` as the line's request id, when it looks like one (it names the usage record). */
function requestIdOf(value: unknown): string | null {
  return typeof value === 'string' && /^[\w.:-]{1,200}$/.test(value) ? value : null;
}
