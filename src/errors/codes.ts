/**
 * The registry of every error code the gateway can answer with. This is the only place a code is born, and the
 * one place its semantics live: `docs/errors.md` is checked against this table by `test/project/errors-registry.test.ts`,
 * and codes are never reused for a different meaning (copying Fastify's lib/errors.js discipline).
 *
 * - `status` is the HTTP status the code is sent with. Codes marked `statusFrom: 'upstream'` keep the upstream's
 *   own 4xx status (so a 404 from the provider stays a 404), falling back to `status`.
 * - `upstream` is set on the failures that are the upstream's doing. The retry loop (`src/core/pipeline/target-runner.ts`)
 *   reads it: `retried` (another try of the same target after a backoff, or the next target, may succeed) and
 *   `opensCircuit` (counts towards opening that upstream's circuit; a 429 does not: it pauses the model instead).
 *   Every other code is the caller's or ours: never retried, and it tells nothing about the upstream.
 * - OpenAI's error `type` (on the drop-in paths) follows from the status the code is sent with:
 *   `openAiErrorType` below.
 */
export interface ErrorCodeSpec {
  readonly status: number;
  readonly message: string;
  readonly statusFrom?: 'upstream';
  readonly upstream?: UpstreamFault;
}

export interface UpstreamFault {
  readonly retried: boolean;
  readonly opensCircuit: boolean;
}

/** A failure another try may fix, and that says the upstream is unwell. */
const RETRIED_FAILURE: UpstreamFault = { retried: true, opensCircuit: true };

export const ERROR_CODES = {
  // --- the caller's request (4xx) ---
  bad_request: { status: 400, message: 'The HTTP request is malformed; see details.reason.' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  validation_failed: { status: 400, message: 'The request has invalid fields; see details.errors.' },
  conversation_too_large: {
    status: 400,
    message:
      'The stored conversation previous_response_id continues is past a bound of this gateway; start a new one (see details).',
  },
  credentials_in_query: {
    status: 400,
    message: 'Credentials must not be sent in the URL query string; send them in a header instead.',
  },
  invalid_query_parameter: { status: 400, message: 'A query parameter is invalid; see details.' },
  capability_not_supported: {
    status: 400,
    message:
      'The request asks for something this route cannot do with the upstream that serves the model; see details.',
  },
  file_not_forwardable: {
    status: 400,
    message:
      "A file the request names cannot be given to the model's upstream (too large to send inline, too many, or of a type it does not take); see details.",
  },
  invalid_multipart: {
    status: 400,
    message: 'The multipart/form-data body is malformed or has unexpected parts; see details.',
  },
  invalid_file_request: { status: 400, message: 'The file or upload request is invalid; see details.' },
  upload_incomplete: {
    status: 400,
    message: "The upload's parts do not make the declared file (unknown parts or wrong total bytes); see details.",
  },
  upload_checksum_mismatch: { status: 400, message: 'The MD5 of the assembled upload is not the one given.' },
  presigned_size_mismatch: {
    status: 400,
    message: 'A presigned PUT must send exactly the bytes its URL was signed for (Content-Length).',
  },
  presigned_url_invalid: {
    status: 403,
    message: 'The presigned URL is not one this gateway signed for this upload, or it has expired.',
  },
  invalid_pagination_token: { status: 400, message: 'The next_token is not one this gateway issued.' },
  invalid_header: { status: 400, message: 'A request header is invalid; see details.' },
  invalid_idempotency_key: {
    status: 400,
    message: 'The Idempotency-Key header must be 1 to 255 characters without control characters, sent once.',
  },
  idempotency_key_mismatch: {
    status: 422,
    message: 'This Idempotency-Key was already used with a different request; use a new key for a new request.',
  },
  idempotency_in_progress: {
    status: 409,
    message: 'A request with this Idempotency-Key is still running; retry after the time in Retry-After.',
  },
  authentication_required: {
    status: 401,
    message: 'This route needs an administrator token: send Authorization: Bearer <ADMIN_TOKEN>.',
  },
  invalid_token: { status: 401, message: 'The bearer token is not valid for this gateway.' },
  token_expired: { status: 401, message: 'The access token has expired; get a new one from the issuer.' },
  token_not_yet_valid: { status: 401, message: 'The access token is not valid yet (nbf or iat in the future).' },
  token_claim_invalid: {
    status: 401,
    message: 'The access token was issued by another issuer or for another audience; see details.claim.',
  },
  token_key_unknown: { status: 401, message: "The access token is signed with a key the issuer's JWKS does not list." },
  token_algorithm_not_allowed: {
    status: 401,
    message: 'The access token uses a signing algorithm this gateway does not accept.',
  },
  oauth_jwks_unavailable: {
    status: 503,
    message: "The issuer's signing keys (JWKS) could not be fetched; try again shortly.",
  },
  basic_auth_requires_https: {
    status: 401,
    message: 'Basic authentication is accepted over HTTPS only: the password must not cross a network in clear text.',
  },
  invalid_credentials: { status: 401, message: 'Unknown user or wrong password.' },
  key_expired: {
    status: 401,
    message: 'This API key has expired; ask for a new one (its successor, if it was rotated).',
  },
  key_revoked: { status: 401, message: 'This API key has been revoked.' },
  wrong_environment: { status: 403, message: "This API key belongs to another environment than this gateway's." },
  route_not_allowed: { status: 403, message: 'This API key may not use this route; see details.allowed_routes.' },
  model_not_allowed: { status: 403, message: 'This API key may not use this model; see details.allowed_models.' },
  budget_exceeded: {
    status: 429,
    message: "This API key's token budget for the period is spent; Retry-After says when some returns.",
  },
  request_exceeds_limit: {
    status: 400,
    message:
      'This request alone needs more tokens than a whole limit allows, so waiting cannot help: lower max_tokens or shorten the prompt; see details.',
  },
  not_found: { status: 404, message: 'No such path; the API lives under /v1/.' },
  route_not_found: { status: 404, message: 'Unknown route; see details.routes for the routes this gateway serves.' },
  key_not_found: { status: 404, message: 'No API key has this id in this environment.' },
  key_not_active: {
    status: 409,
    message:
      'The API key cannot be changed or rotated in its state (revoked, expired, or replaced by a rotation); see details.state.',
  },
  batch_not_found: {
    status: 404,
    message: "No batch has this id for this caller (never created, deleted, or another caller's).",
  },
  batch_input_invalid: {
    status: 400,
    message: 'The batch cannot be created from this input; see details.field and details.problem.',
  },
  batch_not_cancellable: {
    status: 409,
    message: 'The batch has already ended (completed, failed or expired) and cannot be cancelled; see details.status.',
  },
  batch_not_ended: {
    status: 409,
    message: 'The batch is still running; cancel it and wait until it has ended.',
  },
  batch_results_expired: {
    status: 404,
    message:
      "The batch's results are no longer kept (see details.results_expired_at); the batch itself can still be read.",
  },
  response_not_found: {
    status: 404,
    message: "No stored response has this id for this caller (never stored, expired, deleted, or another caller's).",
  },
  file_not_found: {
    status: 404,
    message: "No file has this id for this caller (never stored, expired, deleted, or another caller's).",
  },
  vector_store_not_found: {
    status: 404,
    message: "No vector store has this id for this caller (never created, deleted, or another caller's).",
  },
  mcp_server_not_found: {
    status: 404,
    message: 'No MCP server of this gateway has this name (mcp_servers in the config); see details.servers.',
  },
  vector_store_file_not_found: {
    status: 404,
    message: 'This vector store holds no file with this id (never added, or removed).',
  },
  vector_store_file_batch_not_found: {
    status: 404,
    message: 'This vector store has no file batch with this id.',
  },
  vector_store_expired: {
    status: 400,
    message: 'The vector store has expired (expires_after): its chunks are gone; create a new one.',
  },
  vector_dimension_mismatch: {
    status: 400,
    message: "The vectors' dimension is not the vector store's; see details for both.",
  },
  vector_index_unsupported: {
    status: 400,
    message: 'The vector store backend cannot build this metric or index type; see details for what it can.',
  },
  vector_store_holds_vectors: {
    status: 400,
    message: "The embedding model of a vector store that holds vectors cannot change: its vectors are the old model's.",
  },
  upload_not_found: {
    status: 404,
    message: "No upload has this id for this caller (never created, swept after expiry, or another caller's).",
  },
  model_not_found: { status: 404, message: 'The model is not served by this gateway; list models with ?route=models.' },
  method_not_allowed: { status: 405, message: 'This route does not accept that method; see the Allow header.' },
  unsupported_version: { status: 406, message: 'The requested API version is not served; see details.supported.' },
  request_timeout: {
    status: 408,
    message: 'The request (headers and body) did not arrive within the time allowed; the connection is closed.',
  },
  file_too_large: {
    status: 413,
    message: 'The file, upload or part is larger than the configured bound; see details.',
  },
  exceeds_storage_quota: {
    status: 413,
    message: 'The file, upload or part alone is larger than a storage quota of this gateway; details names the quota.',
  },
  upload_not_pending: {
    status: 409,
    message: 'The upload is no longer taking parts (completed, cancelled or expired); see details.status.',
  },
  presigned_url_used: { status: 409, message: 'The presigned URL was already used; ask for a new one.' },
  payload_too_large: { status: 413, message: 'The request body is larger than the configured limit.' },
  unsupported_media_type: { status: 415, message: 'The request body must be JSON (Content-Type: application/json).' },
  headers_too_large: { status: 431, message: 'The request headers are larger than the server accepts.' },

  // --- the upstream said no to the request (kept 4xx: the request itself is at fault) ---
  upstream_rejected_request: {
    status: 400,
    statusFrom: 'upstream',
    message: 'The upstream provider rejected the request; see details for its own error.',
  },
  context_length_exceeded: {
    status: 400,
    message:
      "The prompt and max_tokens exceed the model's context window; see details, or send X-Context-Overflow: truncate.",
  },
  upstream_content_blocked: {
    status: 400,
    message: "The provider's safety filter refused the prompt; details.reason says why.",
  },
  upstream_key_rejected: {
    status: 401,
    statusFrom: 'upstream',
    message: 'The upstream provider refused the key given in X-Upstream-Key.',
  },
  mcp_tool_not_allowed: {
    status: 403,
    message:
      "This caller may not call this MCP tool: it is not among the key's mcp_tools patterns (or the key lacks the mcp right); see details.",
  },
  mcp_server_url_refused: {
    status: 400,
    message:
      'An MCP tool names a server_url this gateway does not list in mcp_servers: the gateway makes no outbound connection a caller chooses; name a configured server by server_label.',
  },
  mcp_arguments_too_large: {
    status: 413,
    message: "An MCP tool call's arguments are larger than this gateway takes (mcp.max_argument_bytes); see details.",
  },
  rate_limited: {
    status: 429,
    message: 'A rate limit of this gateway is exhausted; retry after the time in Retry-After. details names the limit.',
  },
  storage_quota_exceeded: {
    status: 429,
    message:
      "The caller's stored bytes would pass its storage quota; delete files (or cancel uploads) first. details names the quota.",
  },
  upstream_rate_limited: {
    upstream: { retried: true, opensCircuit: false },
    status: 429,
    message: 'The upstream provider is rate limiting; retry after the time in Retry-After.',
  },

  client_closed_request: {
    status: 499,
    message: 'The caller closed the connection before its answer was complete; the upstream call was cancelled.',
  },

  // --- ours or the upstream's fault (5xx) ---
  internal_error: {
    status: 500,
    message: 'The gateway failed unexpectedly; the request id identifies it in the logs.',
  },
  storage_full: {
    status: 507,
    message:
      "The gateway's storage for files holds all it is configured to (files.quota_bytes_total); nothing was kept.",
  },
  disk_full: {
    status: 507,
    message: "The disk holding the gateway's files is full; nothing of this write was kept.",
  },
  upstream_error: {
    upstream: RETRIED_FAILURE,
    status: 502,
    message: 'The upstream provider answered with a server error.',
  },
  upstream_circuit_open: {
    status: 503,
    message:
      'Every upstream of this model failed repeatedly and is skipped for now (circuit open); retry after Retry-After.',
  },
  upstream_busy: {
    status: 503,
    message:
      'The upstream is at its configured concurrency bound (max_concurrent or max_connections) and no slot freed within queue_timeout_ms; retry after Retry-After. details names the upstream, the calls in flight and the bound.',
  },
  mcp_server_unavailable: {
    status: 502,
    message:
      'The MCP server could not be reached or did not start (it is reconnected with backoff); retry after Retry-After. details names the server.',
  },
  mcp_upstream_error: {
    status: 502,
    message:
      'The MCP server answered the call with a protocol error, or with a result this gateway does not pass on (too large, malformed); see details.',
  },
  mcp_tool_timeout: {
    status: 504,
    message:
      'The MCP tool did not answer within its timeout (mcp_servers[].call_timeout_seconds); the call was cancelled upstream.',
  },
  mcp_streams_busy: {
    status: 503,
    message: 'The gateway holds as many MCP notification streams (GET /mcp) open as it keeps; retry after Retry-After.',
  },
  search_busy: {
    status: 503,
    message: 'The gateway is running as many vector searches as it queues; retry after Retry-After.',
  },
  tokenizer_busy: {
    status: 503,
    message: 'The gateway is counting too many large prompts at once to take this one; retry after Retry-After.',
  },
  upstream_auth_failed: {
    upstream: RETRIED_FAILURE,
    status: 502,
    message: "The upstream provider refused the gateway's configured credential; the operator must fix it.",
  },
  upstream_invalid_response: {
    upstream: RETRIED_FAILURE,
    status: 502,
    message: 'The upstream provider sent a response the gateway cannot read.',
  },
  upstream_connection_reset: {
    upstream: RETRIED_FAILURE,
    status: 502,
    message: 'The upstream connection closed before the answer was complete.',
  },
  upstream_stream_truncated: {
    upstream: RETRIED_FAILURE,
    status: 502,
    message: 'The upstream stream ended before its end-of-stream marker; the answer is incomplete.',
  },
  upstream_stream_malformed: {
    upstream: RETRIED_FAILURE,
    status: 502,
    message: 'The upstream stream carried a frame that is not valid JSON.',
  },
  upstream_stream_error: {
    upstream: RETRIED_FAILURE,
    status: 502,
    message: 'The upstream provider reported an error in the middle of the stream.',
  },
  upstream_unreachable: {
    upstream: RETRIED_FAILURE,
    status: 503,
    message: 'The upstream provider could not be reached.',
  },
  no_upstream_configured: {
    status: 503,
    message:
      'No upstream provider is configured. Set UPSTREAM_BASE_URL (and UPSTREAM_API_KEY) or list upstreams in the GATEWAY_CONFIG file.',
  },
  idempotency_store_unavailable: {
    status: 503,
    message: 'The idempotency store cannot be reached; a call with an Idempotency-Key cannot be protected now.',
  },
  response_store_unavailable: {
    status: 503,
    message: 'The store of Responses API responses cannot be reached; try again shortly.',
  },
  rate_limit_store_unavailable: {
    status: 503,
    message: 'The rate-limit store cannot be reached and the gateway is configured to refuse traffic then.',
  },
  upstream_connect_timeout: {
    upstream: RETRIED_FAILURE,
    status: 504,
    message: 'Connecting to the upstream provider timed out.',
  },
  upstream_first_byte_timeout: {
    upstream: RETRIED_FAILURE,
    status: 504,
    message: 'The upstream provider did not start answering in time.',
  },
  upstream_idle_timeout: {
    upstream: RETRIED_FAILURE,
    status: 504,
    message: 'The upstream provider stopped sending data mid-answer.',
  },
  upstream_total_timeout: {
    upstream: { retried: false, opensCircuit: true },
    status: 504,
    message: 'The upstream call exceeded its total time budget.',
  },
} as const satisfies Record<string, ErrorCodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** What the registry says of a code. */
export function errorSpec(code: ErrorCode): ErrorCodeSpec {
  return ERROR_CODES[code];
}

/** OpenAI's error `type` for the status an error is sent with: what the SDKs use to pick their error class. */
export function openAiErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}
