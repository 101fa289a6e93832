import type { ErrorBody } from '../errors/gateway-error.js';

/** Anthropic's API paths the gateway serves, so the Anthropic SDKs (and Claude Code) work with a base URL change. */
export const ANTHROPIC_MESSAGES_PATH = '/v1/messages';

/** True for `/v1/messages` and below: answers there carry Anthropic's error shape. */
export function isAnthropicPath(url: string): boolean {
  return url.startsWith(ANTHROPIC_MESSAGES_PATH) && (url.length === ANTHROPIC_MESSAGES_PATH.length || '/?'.includes(url.charAt(ANTHROPIC_MESSAGES_PATH.length)));
}

/** Anthropic's error `type` for a status (what its SDKs map to their error classes). */
export function anthropicErrorType(status: number): string {
  if (status === 400 || status === 422) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 503 || status === 529) return 'overloaded_error';
  return 'api_error';
}

/** Anthropic's error body (`{type: "error", error: {type, message}}`) with our code, message and details kept beside it. */
export function withAnthropicError(body: ErrorBody, status: number): ErrorBody & { type: 'error'; error: { type: string; message: string } } {
  return { type: 'error', error: { type: anthropicErrorType(status), message: body.message }, ...body };
}
