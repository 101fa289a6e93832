import type { IncomingHttpHeaders } from 'node:http';
import { fixedAnswer, isObjectBody } from '../../core/pipeline/answer-cache.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { CallerApi } from '../../http/error-shape.js';
import type { ErrorShape } from '../../request/request-state.js';
import {
  withGeminiError,
  type GeminiBatchEmbedRequest,
  type GeminiCountTokensRequest,
  type GeminiEmbedContentRequest,
  type GeminiGenerateRequest,
} from '../../wire/gemini.js';
import type { SurfaceDescriptor, SurfaceEndpoint } from '../descriptor.js';
import type { SurfaceRequest } from '../surface.js';
import { countTokensAnswer, countTokensToChat } from './count-tokens.js';
import {
  batchEmbedAnswer,
  batchEmbedToEmbeddings,
  embedContentAnswer,
  embeddingVectors,
  embedToEmbeddings,
} from './embeddings.js';
import {
  geminiBatchEmbedBodySchema,
  geminiCountTokensBodySchema,
  geminiEmbedContentBodySchema,
  geminiGenerateBodySchema,
} from './gemini-schema.js';
import { geminiCallOf, geminiNativeEstimate, geminiSurface, type GeminiUrlCall } from './gemini-surface.js';
import { findGeminiModel, geminiModelList, geminiPageSize } from './models.js';

/**
 * Gemini's error shape: our body with Gemini's `error` object beside it (wire/gemini.ts `withGeminiError`); in a
 * stream, one `data:` line of that body and a blank line, never an `event:` line (both Google SDKs read only events
 * that start with `data:`, and raise an ApiError for one holding `error.code`).
 */
export const GEMINI_ERRORS: ErrorShape = {
  name: 'gemini',
  body: withGeminiError,
  streamFrame: (body, status, headers) => `data: ${JSON.stringify(withGeminiError(body, status, headers))}\r\n\r\n`,
};

/** Whether a request comes from a Google client: its API key header, or the client header every Google SDK sends. */
function isGoogleClient(headers: IncomingHttpHeaders): boolean {
  return headers['x-goog-api-key'] !== undefined || headers['x-goog-api-client'] !== undefined;
}

const V1_MODELS = '/v1/models';

/**
 * Google's Gemini API as the HTTP layer knows it: everything under `/v1beta/`; on `/v1/` (`@google/genai` 3.x's
 * default version, shared with OpenAI's paths) a `models/{model}:<action>` call (a colon in the last segment: no
 * OpenAI path has one), and `GET /v1/models[/{model}]` from a Google client. Two prefix tests on every request.
 */
export const GEMINI_API: CallerApi = {
  claims: (url, headers) => {
    if (url.startsWith('/v1beta/')) return true;
    if (!url.startsWith(V1_MODELS) || !'/?'.includes(url.charAt(V1_MODELS.length))) return false;
    return /^\/v1\/models\/[^/?]*:/.test(url) || (headers !== undefined && isGoogleClient(headers));
  },
  errors: GEMINI_ERRORS,
  // The models list's page parameters (`pageToken` reads as a credential name otherwise) and the stream's form.
  ownQuery: new Set(['pageToken', 'pageSize', 'alt']),
  credentialHint: 'send the key in the x-goog-api-key header (or Authorization: Bearer <key>), never in the URL',
};

/**
 * The credential a Google client sent, as an Authorization value: `x-goog-api-key` (the SDKs, Gemini CLI) as a
 * Bearer token, else `Authorization` (an OAuth token, or a key sent as Bearer). An empty `x-goog-api-key` (Gemini
 * CLI without a key sends one) is no credential: a 401.
 */
export function geminiAuthorization(headers: IncomingHttpHeaders): string | undefined {
  const key = headers['x-goog-api-key'];
  return typeof key === 'string' && key !== '' ? `Bearer ${key}` : headers.authorization;
}

/** The call a validated request's URL names (its last path parameter and `alt`); the mounting picked its action. */
function urlCall(request: SurfaceRequest): GeminiUrlCall {
  const call = geminiCallOf(
    (request.params as { call?: string }).call ?? '',
    (request.query as { alt?: unknown } | undefined)?.alt,
  );
  // Unreachable: the mounting serves only a segment that ends with one of the actions below.
  if (!call) throw new Error('a Gemini call whose URL names no model and action');
  return call;
}

/** The endpoints of one version's `models/{model}:<action>` path. */
function actionEndpoints(path: string): SurfaceEndpoint[] {
  const embeddings = { operation: 'embed', routeName: 'embeddings', rights: ['gemini', 'embeddings'] } as const;
  return [
    { method: 'POST', path, action: 'generateContent', operation: 'generate', bodySchema: geminiGenerateBodySchema },
    {
      method: 'POST',
      path,
      action: 'streamGenerateContent',
      operation: 'generate',
      bodySchema: geminiGenerateBodySchema,
    },
    // The `gemini` right, but no model call to record (as Anthropic's count_tokens).
    {
      method: 'POST',
      path,
      action: 'countTokens',
      operation: 'count_tokens',
      bodySchema: geminiCountTokensBodySchema,
      routeName: 'count_tokens',
    },
    // Embeddings calls, recorded, limited and reported as the embeddings route's; the `gemini` right lets in too.
    { method: 'POST', path, action: 'embedContent', bodySchema: geminiEmbedContentBodySchema, ...embeddings },
    { method: 'POST', path, action: 'batchEmbedContents', bodySchema: geminiBatchEmbedBodySchema, ...embeddings },
  ];
}

/** Who may list the models in Gemini's shape: a caller with the `models` right, or with the `gemini` right. */
const MODELS_RIGHTS = ['models', 'gemini'] as const;

/**
 * Google's Gemini API (Gemini CLI, `@google/genai`): `POST /v1beta/models/{model}:generateContent`,
 * `:streamGenerateContent` (`alt=sse`, or the JSON array), `:countTokens`, `:embedContent`, `:batchEmbedContents`,
 * `GET /v1beta/models[/{model}]`, and the same on `/v1/` (the models list there when a Google client asks). The
 * model and the stream are the URL's. Credentials in `x-goog-api-key` or `Authorization: Bearer`; Gemini's error
 * body beside ours. Forwarded as it is to a Gemini upstream, translated for any other (docs/gemini.md).
 */
export const GEMINI_DESCRIPTOR: SurfaceDescriptor = {
  route: 'gemini',
  oauthScope: 'gemini:write',
  api: GEMINI_API,
  endpoints: [
    ...actionEndpoints('/v1beta/models/:call'),
    ...actionEndpoints(`${V1_MODELS}/:call`),
    { method: 'GET', path: '/v1beta/models', operation: 'list_models', routeName: 'models', rights: MODELS_RIGHTS },
    {
      method: 'GET',
      path: '/v1beta/models/:model',
      operation: 'get_model',
      routeName: 'models',
      rights: MODELS_RIGHTS,
    },
  ],
  credential: geminiAuthorization,
  modelOf: (request) => urlCall(request).model,
  streamOf: (request) => urlCall(request).stream ?? false,
  events: {
    completed: 'gemini.completed',
    failed: 'gemini.failed',
    prompt: (body) => ({ contents: (body as { contents?: unknown } | undefined)?.contents ?? null }),
  },
  cache: {
    cacheable: (body, policy) =>
      isObjectBody(body) &&
      fixedAnswer(policy, (body as GeminiGenerateRequest).generationConfig?.temperature, [body.tools]),
    // The model and action are the URL's, and so is the stream's form (the same answer in another framing).
    keyOf: (request) => {
      const { model, action, stream } = urlCall(request);
      return stream === undefined ? `${model}:${action}` : `${model}:${action} ${stream}`;
    },
  },
  native: { api: 'gemini', estimate: (body) => geminiNativeEstimate(body as GeminiGenerateRequest) },
  translation: (deps) => geminiSurface(deps.forwards),
  tokenCount: {
    toChat: (request) => countTokensToChat(request.body as GeminiCountTokensRequest, urlCall(request).model),
    answer: countTokensAnswer,
  },
  embeddings: {
    toEmbeddings: (request) => {
      const { model, action } = urlCall(request);
      return action === 'embedContent'
        ? embedToEmbeddings(request.body as GeminiEmbedContentRequest, model)
        : batchEmbedToEmbeddings(request.body as GeminiBatchEmbedRequest, model);
    },
    answer: (result, embeddings, _usage, request) => {
      const vectors = embeddingVectors(result, Array.isArray(embeddings.input) ? embeddings.input.length : 1);
      return JSON.stringify(
        urlCall(request).action === 'embedContent' ? embedContentAnswer(vectors) : batchEmbedAnswer(vectors),
      );
    },
  },
  models: {
    rights: MODELS_RIGHTS,
    list: async (source, query) => {
      const token = query.pageToken;
      if (token !== undefined && typeof token !== 'string')
        throw new GatewayError('invalid_pagination_token', { parameter: 'pageToken' });
      const size = geminiPageSize(query.pageSize);
      try {
        // An empty token is the first page, as Gemini takes it.
        return geminiModelList(await source.page(size, token === '' ? undefined : token));
      } catch (error) {
        // The catalog's refusal names its own parameter; the caller sent this one.
        if (error instanceof GatewayError && error.code === 'invalid_pagination_token')
          throw new GatewayError('invalid_pagination_token', { parameter: 'pageToken' });
        throw error;
      }
    },
    get: (models, id) => findGeminiModel(models, id),
  },
};
