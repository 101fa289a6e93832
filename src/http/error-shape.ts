import type { IncomingHttpHeaders } from 'node:http';
import type { ErrorBody } from '../errors/gateway-error.js';
import type { ErrorShape } from '../request/request-state.js';
import { formatErrorEvent } from './sse.js';

/** The gateway's own shape: `{code, message, details}` and nothing else (`/v1/?route=...`, `/`, `/metrics`...). */
export const GATEWAY_ERRORS: ErrorShape = {
  name: 'gateway',
  body: (body) => body,
  streamFrame: (body) => formatErrorEvent(body),
};

/** Our error body, plus the error object of the API whose path was called (what that API's SDKs read). */
export function shapedError(
  body: ErrorBody,
  status: number,
  shape: ErrorShape,
  headers?: Readonly<Record<string, string>>,
): ErrorBody {
  return shape.body(body, status, headers);
}

/**
 * A public API whose paths the gateway serves (OpenAI's, Anthropic's...), as the layer below the surfaces knows it:
 * which requests are its, the error shape they get, and the query names that are its own. Surfaces name theirs in
 * their descriptor (surfaces/descriptor.ts); the wiring hands the list to the server.
 */
export interface CallerApi {
  /**
   * Whether a request is this API's: one of its own paths, or a path it shares that its client called (its headers
   * say so; `headers` is undefined where only the URL is known). Runs on every request: a cheap prefix test.
   */
  claims(url: string, headers: IncomingHttpHeaders | undefined): boolean;
  /** A catch-all claim (OpenAI's: any `/v1/<path>`), asked only after every other API's. */
  readonly fallback?: boolean;
  readonly errors: ErrorShape;
  /** Query names that are this API's own (Google's `pageToken`): never taken for credentials on its requests. */
  readonly ownQuery?: ReadonlySet<string>;
  /** What a `credentials_in_query` refusal on its paths tells its callers to do instead. */
  readonly credentialHint?: string;
}

/** The gateway's own API: what a request no other API claims is. */
export const GATEWAY_API: CallerApi = { claims: () => true, errors: GATEWAY_ERRORS };

/**
 * The APIs the gateway serves, in the order their claims are asked: each specific claim in the order given, then
 * the catch-all ones; the first that claims a request is its API (the gateway's own when none does).
 */
export class CallerApis {
  private readonly order: readonly CallerApi[];

  constructor(apis: readonly CallerApi[]) {
    const unique = [...new Set(apis)];
    this.order = [...unique.filter((api) => api.fallback !== true), ...unique.filter((api) => api.fallback === true)];
  }

  /** The API a request is (on every request: one prefix test or two per API). */
  of(url: string, headers: IncomingHttpHeaders | undefined): CallerApi {
    for (const api of this.order) if (api.claims(url, headers)) return api;
    return GATEWAY_API;
  }
}
