import { openAiErrorType } from '../errors/codes.js';
import type { ErrorBody } from '../errors/gateway-error.js';
import type { ErrorShape } from '../request/request-state.js';
import type { CallerApi } from './error-shape.js';
import { formatErrorEvent } from './sse.js';

/** Paths of OpenAI's own API, so the official SDKs work with only `baseURL` and `apiKey` changed. */
export const OPENAI_CHAT_PATH = '/v1/chat/completions';
export const OPENAI_MODELS_PATH = '/v1/models';
export const OPENAI_RESPONSES_PATH = '/v1/responses';
export const OPENAI_EMBEDDINGS_PATH = '/v1/embeddings';
/** What the drop-in paths serve, for the 404 of any other /v1/<path> (an SDK calling /v1/embeddings...). */
export const OPENAI_PATHS = [
  'POST /v1/chat/completions',
  'POST /v1/responses',
  'POST /v1/embeddings',
  'GET|DELETE /v1/responses/{id}',
  'GET /v1/responses/{id}/input_items',
  'GET /v1/models',
  'GET /v1/models/{id}',
  'POST|GET /v1/files',
  'GET|DELETE /v1/files/{id}',
  'GET /v1/files/{id}/content',
  'POST /v1/uploads[/{id}/parts|complete|cancel|presign]',
  'PUT /v1/uploads/{id}/presigned/{token}',
  'POST|GET /v1/batches',
  'GET /v1/batches/{id}',
  'POST /v1/batches/{id}/cancel',
  'POST|GET /v1/vector_stores',
  'GET|POST|DELETE /v1/vector_stores/{id}',
  'POST /v1/vector_stores/{id}/search',
  'POST|GET /v1/vector_stores/{id}/files',
  'GET|POST|DELETE /v1/vector_stores/{id}/files/{file_id}',
  'GET /v1/vector_stores/{id}/files/{file_id}/content',
  'POST /v1/vector_stores/{id}/file_batches',
  'GET /v1/vector_stores/{id}/file_batches/{batch_id}[/files]',
  'POST /v1/vector_stores/{id}/file_batches/{batch_id}/cancel',
];
export const OPENAI_NOT_FOUND_MESSAGE = `This OpenAI API path is not served by this gateway; it serves ${OPENAI_PATHS.join(', ')}.`;

/**
 * True for a path under /v1/ other than our own `/v1/?route=...`: the paths an OpenAI SDK calls with
 * `baseURL: .../v1`. Every answer there carries OpenAI's `error` object, a 404 or a 401 included.
 */
export function isOpenAiPath(url: string): boolean {
  return url.length > 4 && url.startsWith('/v1/') && url.charCodeAt(4) !== 0x3f; // "?"
}

/** The methods a drop-in path takes (for a 405 with Allow), or undefined when the path is not one of them. */
export function openAiPathMethods(path: string): string[] | undefined {
  const p = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  if (p === OPENAI_CHAT_PATH || p === OPENAI_RESPONSES_PATH || p === OPENAI_EMBEDDINGS_PATH) return ['POST'];
  if (p === OPENAI_MODELS_PATH || /^\/v1\/models\/[^/]+$/.test(p)) return ['GET', 'HEAD'];
  if (/^\/v1\/responses\/[^/]+$/.test(p)) return ['GET', 'HEAD', 'DELETE'];
  if (/^\/v1\/responses\/[^/]+\/input_items$/.test(p)) return ['GET', 'HEAD'];
  if (p === '/v1/files' || p === '/v1/batches') return ['GET', 'HEAD', 'POST'];
  if (/^\/v1\/files\/[^/]+$/.test(p)) return ['GET', 'HEAD', 'DELETE'];
  if (/^\/v1\/(files\/[^/]+\/content|batches\/[^/]+)$/.test(p)) return ['GET', 'HEAD'];
  if (p === '/v1/uploads' || /^\/v1\/(uploads\/[^/]+\/(parts|complete|cancel|presign)|batches\/[^/]+\/cancel)$/.test(p))
    return ['POST'];
  if (/^\/v1\/uploads\/[^/]+\/presigned\/[^/]+$/.test(p)) return ['PUT'];
  return vectorStorePathMethods(p);
}

/** The methods of a Vector Stores API path (docs/retrieval.md), or undefined. */
function vectorStorePathMethods(p: string): string[] | undefined {
  if (!p.startsWith('/v1/vector_stores')) return undefined;
  const rest = p.slice('/v1/vector_stores'.length);
  if (rest === '' || /^\/[^/]+\/files$/.test(rest)) return ['GET', 'HEAD', 'POST'];
  if (/^\/[^/]+$/.test(rest) || /^\/[^/]+\/files\/[^/]+$/.test(rest)) return ['GET', 'HEAD', 'POST', 'DELETE'];
  if (/^\/[^/]+\/(search|file_batches|file_batches\/[^/]+\/cancel)$/.test(rest)) return ['POST'];
  if (/^\/[^/]+\/(files\/[^/]+\/content|file_batches\/[^/]+(\/files)?)$/.test(rest)) return ['GET', 'HEAD'];
  return undefined;
}

/**
 * Our error body plus OpenAI's `error` object, for the drop-in paths. `param` is the request's field or query
 * parameter our details name (the first of `errors`, else `field` or `parameter` of a caller's error), as OpenAI
 * sets it; null when none is named (a 5xx names none: its `field` is not the caller's).
 */
export function withOpenAiError(body: ErrorBody, status: number): ErrorBody & { error: Record<string, unknown> } {
  const details = body.details as { errors?: Array<{ field?: unknown }>; field?: unknown; parameter?: unknown };
  const param = details.errors?.[0]?.field ?? (status < 500 ? (details.field ?? details.parameter) : undefined);
  return {
    ...body,
    error: {
      message: body.message,
      type: openAiErrorType(status),
      code: body.code,
      param: typeof param === 'string' ? param : null,
    },
  };
}

/** OpenAI's error shape: its `error` object beside ours; in a stream, one `event: error` frame of that body. */
export const OPENAI_ERRORS: ErrorShape = {
  name: 'openai',
  body: (body, status) => withOpenAiError(body, status),
  streamFrame: (body, status) => formatErrorEvent(withOpenAiError(body, status)),
};

/** OpenAI's API: every path under `/v1/` that no other API claims (a 404 there included). */
export const OPENAI_API: CallerApi = { claims: isOpenAiPath, fallback: true, errors: OPENAI_ERRORS };
