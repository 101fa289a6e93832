import type { IncomingHttpHeaders } from 'node:http';
import type { RouteRight } from '../names/api-names.js';
import type { CachePolicy } from '../config/types.js';
import type { CatalogModel, ModelPage } from '../core/models/model-catalog.js';
import type { TokenEstimate } from '../core/limits/rate-limit-service.js';
import type { CallerApi } from '../http/error-shape.js';
import type {
  ChatExtra,
  ChatRequestBody,
  EmbeddingsRequestBody,
  EmbeddingsResult,
  NativeApiName,
} from '../providers/provider-contract.js';
import type { PricedUsage } from '../core/models/pricing.js';
import type { FileSearch } from '../core/retrieval/file-search.js';
import type { McpLoopDeps } from './mcp-tools/mcp-deps.js';
import type { RouteName } from '../request/route-name.js';
import type { RouteEvents } from '../webhooks/gateway-events.js';
import type { NativeOwnership } from './native-ownership.js';
import type { ResponseHistory } from './responses/response-history.js';
import type { ApiSurface, SurfaceRequest } from './surface.js';

/**
 * One public API the gateway speaks (chat completions, OpenAI's Responses API, Anthropic's Messages API...), declared
 * once: its paths, where a call's model and streaming come from, its credentials, its error shape, its right and
 * OAuth scope, its webhook events, its cache rule, its native upstream API and the translation at its edge.
 * Registered in surfaces/surface-registry.ts; mounting (routes/mount-surface.ts), `/v1/?route=`, the error shape and query
 * rules of its paths, events, the cache and native forwarding read it instead of switching on names. The layers
 * below the surfaces get plain data built from it by the wiring (wiring/surfaces-wiring.ts).
 */
export interface SurfaceDescriptor {
  /**
   * Its route: the right a key or token needs, what its calls are recorded and observed under, and the scope of their
   * Idempotency-Keys and cache entries. Its entry's in names/api-names.ts, or a name of its own that no other layer
   * needs to know: mounting it makes it a route a caller can be given (names/api-names.ts `grantableRoutes`).
   */
  readonly route: RouteRight;
  /**
   * The OAuth scope that grants the route by default: its entry's in names/api-names.ts, or (a route of its own) its
   * own, a default of every app that mounts it (`defaultOAuthScopes`).
   */
  readonly oauthScope: string;
  /**
   * The API whose paths it serves, as the HTTP layer knows it: which requests are its (its own paths, and a shared
   * path such as `GET /v1/models` when its client's headers say so), their error shape (JSON and in-stream), its own
   * query names (never taken for credentials) and the hint of a `credentials_in_query` refusal. Two surfaces of one
   * API (chat and Responses: OpenAI's) share one.
   */
  readonly api: CallerApi;
  /** Its own paths and what each does. */
  readonly endpoints: readonly SurfaceEndpoint[];
  /** Also served as `/v1/?route=<route>` (its `generate` endpoint, with the admin credentials); absent: not there. */
  readonly v1Route?: { readonly methods: readonly string[]; readonly auth: string; readonly description: string };
  /** The credential its clients send, as an Authorization value (`x-api-key: k` -> `Bearer k`); undefined: none. */
  credential(headers: IncomingHttpHeaders): string | undefined;
  /** A header every answer on its paths carries with the request id (Anthropic's `request-id`, which its SDKs quote). */
  readonly requestIdHeader?: string;
  /** The model a call names: the body's `model`, or the path's (a validated request). */
  modelOf(request: SurfaceRequest): string;
  /**
   * Whether a call streams, and how: `sse` (text/event-stream) or `json-array` (one JSON array written as it comes,
   * application/json); false for one JSON answer. From the body's `stream`, or from the path and query.
   */
  streamOf(request: SurfaceRequest): StreamMode | false;
  /** Its webhook events (`<x>.completed`, `<x>.failed`) and what an event with content shows as the prompt. */
  readonly events: RouteEvents;
  /** What makes an answer cacheable under a model's policy, and what of the URL (not the body) keys it. */
  readonly cache: SurfaceCacheRule;
  /** The upstream API that takes its requests untranslated, and the admission estimate of such a request. */
  readonly native?: NativeSpec;
  /** Its translation at the edge of the chat pipeline (built once per app, from what it may need). */
  translation(deps: SurfaceDeps): ApiSurface;
  /** For a `count_tokens` endpoint: the request as chat (what is counted) and the answer in its shape. */
  readonly tokenCount?: TokenCountSpec;
  /** For an `embed` endpoint: the request as OpenAI embeddings, and the answer back. */
  readonly embeddings?: EmbeddingsSpec;
  /**
   * Its models list and lookup (`list_models`, `get_model` endpoints; and `GET /v1/models[/{id}]` when `api`
   * claims the call by its headers), over the models the caller may see.
   */
  readonly models?: ModelsSpec;
}

export type StreamMode = 'sse' | 'json-array';

/** What an endpoint does. */
export type SurfaceOperation = 'generate' | 'count_tokens' | 'embed' | 'list_models' | 'get_model';

export interface SurfaceEndpoint {
  readonly method: 'GET' | 'POST';
  /** A Fastify path pattern (`/v1/messages`, `/v1beta/models/:call`). */
  readonly path: string;
  /**
   * Google-style custom methods: the last path parameter ends with `:<action>` (`gemini-x:generateContent`).
   * Endpoints of one method and path are told apart by it (one route serves them all); another action is a 404.
   */
  readonly action?: string;
  readonly operation: SurfaceOperation;
  /** The body's JSON Schema (POST). */
  readonly bodySchema?: object;
  /** What its requests are recorded as, when not the surface's route (Anthropic's `count_tokens`). */
  readonly routeName?: RouteName;
  /** The routes any one of which lets a caller in, when not the surface's own. */
  readonly rights?: readonly RouteRight[];
  /** The path is the surface's alone: another method gets 405 with Allow (an SDK's GET on a POST path). */
  readonly exclusive?: boolean;
}

export interface SurfaceCacheRule {
  /** Whether a request's answer may be served from (and kept in) the cache under the model's policy. */
  cacheable(body: unknown, policy: CachePolicy): boolean;
  /** What of the URL changes the answer (a model in the path, the stream's form); absent when the body says it all. */
  keyOf?(request: SurfaceRequest): string | undefined;
}

export interface NativeSpec {
  readonly api: NativeApiName;
  /** The admission estimate of a request forwarded as it is: its prompt's size and its maximum output. */
  estimate(body: unknown): TokenEstimate;
}

/** What a surface's translation may need, built once per app by the wiring. */
export interface SurfaceDeps {
  /** Whether some upstream of the model speaks the surface's native API (false without `native`); may throw for a model that cannot be routed. */
  forwards(model: string): boolean;
  /** Whether every upstream of the model speaks it and the model's config wants it used (`responses: native`). */
  forwardsWholly(model: string): boolean;
  /** Whether every upstream the model may be sent to carries a chat field (providers/provider-contract.ts ChatExtra); may throw likewise. */
  carries(model: string, field: ChatExtra): boolean;
  /** Who made each id a native upstream keeps. */
  readonly ownership: NativeOwnership;
  /** Stored Responses API responses (absent: none kept). */
  readonly history: ResponseHistory | undefined;
  /** Searches of the caller's vector stores, for the `file_search` tool the gateway runs (absent: the tool is refused). */
  readonly fileSearch: FileSearch | undefined;
  /** The MCP servers and tool service, for the MCP tools the gateway runs for a model (absent: such tools are refused). */
  readonly mcp?: McpLoopDeps | undefined;
}

export interface TokenCountSpec {
  /** The request as chat, to count its prompt where no upstream counts it (a validated body). */
  toChat(request: SurfaceRequest): ChatRequestBody;
  /** The answer in the surface's shape (`{input_tokens}`, `{totalTokens}`). */
  answer(tokens: number): unknown;
}

export interface EmbeddingsSpec {
  /** The OpenAI embeddings request a validated request stands for. */
  toEmbeddings(request: SurfaceRequest): EmbeddingsRequestBody;
  /** The caller's JSON answer from the upstream's result (OpenAI's bytes, or vectors in input order). */
  answer(
    result: EmbeddingsResult,
    embeddings: EmbeddingsRequestBody,
    usage: PricedUsage | undefined,
    request: SurfaceRequest,
  ): string | Buffer;
}

export interface ModelsSpec {
  /** The routes any one of which lets a caller list models in this shape (Anthropic's: `models` or `messages`). */
  readonly rights: readonly RouteRight[];
  /** One page of the models in the surface's shape (the query is the caller's: its own page parameters). */
  list(models: ModelSource, query: Readonly<Record<string, unknown>>): unknown;
  /** One model by id (or alias) in the surface's shape; undefined: not one the caller may see (a 404). */
  get(models: readonly CatalogModel[], id: string): unknown;
}

/** The models the caller may see: all of them in the catalog's order, or one page of the catalog (its cursor). */
export interface ModelSource {
  all(): Promise<CatalogModel[]>;
  page(limit: number, token: string | undefined): Promise<ModelPage>;
}
