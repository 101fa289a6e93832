import { GatewayError } from '../errors/gateway-error.js';
import { scrubText } from '../observability/redact.js';

const MAX_MESSAGE_CHARS = 2_000;

export interface UpstreamHttpFailure {
  upstream: string;
  status: number;
  bodyText: string;
  retryAfter: string | undefined;
  keyFromCaller: boolean;
  /** Secrets that must not survive into details (the key used for the call). */
  secrets: ReadonlyArray<string | undefined>;
}

/**
 * An upstream's non-2xx answer in our error model. The upstream's own code and message go into `details`
 * (secrets scrubbed: providers like to echo a masked key back). 4xx stays 4xx because the request itself is at
 * fault; a refused *configured* key is the operator's problem, so it is a 502, not something the caller can fix.
 */
export function mapUpstreamHttpError(failure: UpstreamHttpFailure): GatewayError {
  const { status, upstream } = failure;
  const parsed = parseProviderError(failure.bodyText);
  const details: Record<string, unknown> = {
    upstream,
    upstream_status: status,
    upstream_code: parsed.code,
    upstream_type: parsed.type,
    upstream_message: parsed.message === undefined ? undefined : scrubText(parsed.message, failure.secrets),
  };
  for (const key of Object.keys(details)) if (details[key] === undefined) delete details[key];

  if (status === 429) {
    const headers = failure.retryAfter ? { 'retry-after': failure.retryAfter } : undefined;
    return new GatewayError('upstream_rate_limited', details, headers ? { headers } : {});
  }
  if (status === 401 || status === 403) {
    return new GatewayError(failure.keyFromCaller ? 'upstream_key_rejected' : 'upstream_auth_failed', details);
  }
  if (status >= 400 && status < 500) {
    return new GatewayError('upstream_rejected_request', details, { upstreamStatus: status });
  }
  return new GatewayError('upstream_error', details);
}

interface ProviderError {
  code: string | undefined;
  type: string | undefined;
  message: string | undefined;
}

/** Reads the common provider error shapes: `{error:{message,type,code}}`, `{error:"..."}`, `{message}`, text. */
export function parseProviderError(bodyText: string): ProviderError {
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    const text = bodyText.trim();
    return { code: undefined, type: undefined, message: text ? text.slice(0, MAX_MESSAGE_CHARS) : undefined };
  }
  const record = asRecord(body);
  const inner = asRecord(record?.error) ?? record;
  const message = typeof record?.error === 'string' ? record.error : inner?.message;
  return {
    code: stringOrUndefined(inner?.code),
    type: stringOrUndefined(inner?.type),
    message: typeof message === 'string' ? message.slice(0, MAX_MESSAGE_CHARS) : undefined,
  };
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function stringOrUndefined(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return undefined;
}
