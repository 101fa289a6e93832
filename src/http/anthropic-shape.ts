import type { IncomingHttpHeaders } from 'node:http';
import type { ErrorBody } from '../errors/gateway-error.js';
import type { ErrorShape } from '../request/request-state.js';
import { anthropicErrorDetailsOf, anthropicErrorType, type AnthropicErrorBody } from '../wire/anthropic.js';
import type { CallerApi } from './error-shape.js';
import { formatErrorEvent } from './sse.js';

/** Anthropic's API paths the gateway serves, so the Anthropic SDKs (and Claude Code) work with a base URL change. */
export const ANTHROPIC_MESSAGES_PATH = '/v1/messages';

/**
 * The credential an Anthropic client sent, as an Authorization value: `Authorization` when present (Claude Code
 * with ANTHROPIC_AUTH_TOKEN, the SDKs from 1.0), else `x-api-key` as a Bearer token (the SDKs before 1.0, Claude
 * Code with ANTHROPIC_API_KEY).
 */
export function anthropicAuthorization(headers: IncomingHttpHeaders): string | undefined {
  const apiKey = headers['x-api-key'];
  return headers.authorization ?? (typeof apiKey === 'string' && apiKey !== '' ? `Bearer ${apiKey}` : undefined);
}

/**
 * A call of `/v1/models` (or `/v1/models/{id}`) by an Anthropic client: one that sends `x-api-key` or
 * `anthropic-version`, which no OpenAI client does. It gets Anthropic's models API, errors included.
 */
export function isAnthropicModelsCall(url: string, headers: IncomingHttpHeaders): boolean {
  if (!url.startsWith('/v1/models') || !'/?'.includes(url.charAt(10))) return false;
  return headers['x-api-key'] !== undefined || headers['anthropic-version'] !== undefined;
}

/** True for `/v1/messages` and below: answers there carry Anthropic's error shape. */
export function isAnthropicPath(url: string): boolean {
  return (
    url.startsWith(ANTHROPIC_MESSAGES_PATH) &&
    (url.length === ANTHROPIC_MESSAGES_PATH.length || '/?'.includes(url.charAt(ANTHROPIC_MESSAGES_PATH.length)))
  );
}

/**
 * Anthropic's error body (`{type: "error", error: {type, message}}`) with our code, message and details kept beside
 * it. `error.details`, Anthropic's machine-readable cause (`{error_code, ...}`, what its SDKs branch on), is our
 * `details.error_details` (a refusal the gateway makes in Anthropic's terms: a thread on a translated model) or else
 * `details.upstream_details` (an Anthropic upstream's own, passed on), when it is one.
 */
export function withAnthropicError(body: ErrorBody, status: number): ErrorBody & AnthropicErrorBody {
  const details =
    anthropicErrorDetailsOf(body.details.error_details) ?? anthropicErrorDetailsOf(body.details.upstream_details);
  const error: AnthropicErrorBody['error'] = { type: anthropicErrorType(status), message: body.message };
  if (details) error.details = details;
  return { type: 'error', error, ...body };
}

/** Anthropic's error shape; in a stream, one `error` event of that body (what its SDKs raise). */
export const ANTHROPIC_ERRORS: ErrorShape = {
  name: 'anthropic',
  body: (body, status) => withAnthropicError(body, status),
  streamFrame: (body, status) => formatErrorEvent(withAnthropicError(body, status)),
};

/** Anthropic's API: `/v1/messages` and below, and `/v1/models` called by an Anthropic client. */
export const ANTHROPIC_API: CallerApi = {
  claims: (url, headers) => isAnthropicPath(url) || (headers !== undefined && isAnthropicModelsCall(url, headers)),
  errors: ANTHROPIC_ERRORS,
};
