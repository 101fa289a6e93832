import type { ErrorBody } from '../errors/gateway-error.js';
import type { ErrorShape } from '../request/request-state.js';
import { withAnthropicError } from './anthropic-shape.js';
import { withOpenAiError } from './openai-shape.js';
import { isAnthropicModelsCall, isAnthropicPath } from './anthropic-shape.js';
import type { IncomingHttpHeaders } from 'node:http';
import { isOpenAiPath } from './openai-shape.js';

/** Our error body, plus the error object of the API whose path was called (what that API's SDKs read). */
export function shapedError(body: ErrorBody, status: number, shape: ErrorShape): ErrorBody {
  if (shape === 'openai') return withOpenAiError(body, status);
  if (shape === 'anthropic') return withAnthropicError(body, status);
  return body;
}

/**
 * The error shape a URL's answers carry: Anthropic's on /v1/messages and on /v1/models called by an Anthropic
 * client (its headers say so), OpenAI's on any other /v1/<path>.
 */
export function errorShapeOf(url: string, headers?: IncomingHttpHeaders): ErrorShape {
  if (isAnthropicPath(url) || (headers !== undefined && isAnthropicModelsCall(url, headers))) return 'anthropic';
  return isOpenAiPath(url) ? 'openai' : 'gateway';
}
