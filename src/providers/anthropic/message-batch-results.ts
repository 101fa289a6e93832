import { GatewayError } from '../../errors/gateway-error.js';
import { scrubText } from '../../secrets/redact.js';
import { KeyScrubber } from '../../secrets/key-scrubber.js';
import { MESSAGES_WIRE } from '../native-passthrough.js';
import { objectOf } from '../../wire/json.js';
import { indexOfCustomId } from '../batch-api.js';
import { completionJson } from '../completion-json.js';
import type { NativeLineResult } from '../provider-contract.js';
import { mapUpstreamHttpError } from '../upstream-http-error.js';
import { fromAnthropicMessage } from './translate-response.js';

/**
 * The HTTP status a Messages call answers with each of Anthropic's error types (docs: "Errors"): a batch result
 * carries only the type, so the line's status is read from it. An unknown type is the upstream's fault (500).
 */
const STATUS_OF_ERROR_TYPE: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/** What one results line is read with: the upstream's name (errors), the key to scrub, the lines' endpoint. */
export interface ResultContext {
  upstream: string;
  secrets: ReadonlyArray<string | undefined>;
  /** `/v1/messages` (Anthropic's shapes as they came) or `/v1/chat/completions` (translated back). */
  endpoint: string;
}

/** A field of text cut to `max` characters, or undefined when it is not text. */
function cut(value: unknown, max: number): string | undefined {
  return typeof value === 'string' ? value.slice(0, max) : undefined;
}

/**
 * One line of a Message Batch's results (`{custom_id, result: {type, message | error}}`) as the line's result in
 * its endpoint's shape. Undefined for a line the gateway cannot attribute (not JSON, a custom id it did not write)
 * and for `canceled` and `expired` results: the upstream ran nothing for those, so the line stays unanswered and
 * the gateway's runner closes it as its own batch ends (canceled, expired) or as missing. Any other line that names
 * one of ours but is not a readable answer or error becomes an errored line (502): never a crash.
 */
export function messageBatchResult(text: string, context: ResultContext): NativeLineResult | undefined {
  let line: Record<string, unknown> | undefined;
  try {
    line = objectOf(JSON.parse(text));
  } catch {
    return undefined;
  }
  const index = indexOfCustomId(line?.custom_id);
  if (index === undefined) return undefined;
  const result = objectOf(line?.result);
  switch (result?.type) {
    case 'succeeded':
      return succeeded(index, result.message, context);
    case 'errored':
      return errored(index, result.error, context);
    case 'canceled':
    case 'expired':
      return undefined;
    default:
      return malformed(index, 'a result of no known type', context);
  }
}

function succeeded(index: number, message: unknown, context: ResultContext): NativeLineResult {
  const m = objectOf(message);
  if (m?.type !== 'message' || !Array.isArray(m.content)) return malformed(index, 'not an Anthropic message', context);
  if (context.endpoint === '/v1/messages') {
    // Its usage first: a figure out of range is corrected in the message itself, which then shows what is counted.
    const usage = MESSAGES_WIRE.answerUsage(m);
    return { index, status: 200, body: scrubbed(JSON.stringify(m), context), usage, requestId: null };
  }
  // The same translation an interactive chat call's answer gets (AnthropicProvider.chat).
  const translated = fromAnthropicMessage(m, '', Math.floor(Date.now() / 1000));
  if (!translated) return malformed(index, 'not an Anthropic message', context);
  const body = scrubbed(completionJson(translated.completion), context);
  return { index, status: 200, body, usage: translated.usage, requestId: null };
}

/** An answer's JSON without the batch's key (only that key: key-scrubber.ts). */
function scrubbed(json: string, context: ResultContext): string {
  return KeyScrubber.of(context.secrets)?.scrub(json) ?? json;
}

/**
 * An `errored` result: `error` is Anthropic's ErrorResponse (`{type: "error", error: {type, message}, request_id}`);
 * an older bare `{type, message}` is read too. A Messages line keeps Anthropic's error (scrubbed, cut); a chat line
 * gets the error an interactive call would have had from the same upstream answer (mapUpstreamHttpError).
 */
function errored(index: number, error: unknown, context: ResultContext): NativeLineResult {
  const outer = objectOf(error);
  const inner = outer?.type === 'error' ? objectOf(outer.error) : outer;
  const type = cut(inner?.type, 100);
  if (inner === undefined || type === undefined) return malformed(index, 'an error of no known type', context);
  const message = scrubText(cut(inner.message, 2_000) ?? 'The request failed.', context.secrets);
  const requestId = cut(outer?.request_id, 200) ?? null;
  const status = STATUS_OF_ERROR_TYPE[type] ?? 500;
  const anthropicError = { type: 'error', error: { type: scrubText(type, context.secrets), message } };
  if (context.endpoint === '/v1/messages')
    return { index, status, body: JSON.stringify(anthropicError), usage: undefined, requestId };
  const mapped = mapUpstreamHttpError({
    upstream: context.upstream,
    status,
    bodyText: JSON.stringify(anthropicError),
    retryAfter: undefined,
    keyFromCaller: false,
    secrets: context.secrets,
  });
  return { index, status: mapped.status, body: JSON.stringify(mapped.toBody()), usage: undefined, requestId };
}

/** A result that names one of our lines but cannot be read: the upstream's fault, in the endpoint's error shape. */
function malformed(index: number, reason: string, context: ResultContext): NativeLineResult {
  const error = new GatewayError('upstream_invalid_response', { upstream: context.upstream, reason });
  const body =
    context.endpoint === '/v1/messages'
      ? { type: 'error', error: { type: 'api_error', message: `${error.message} (${reason})` } }
      : error.toBody();
  return { index, status: error.status, body: JSON.stringify(body), usage: undefined, requestId: null };
}
