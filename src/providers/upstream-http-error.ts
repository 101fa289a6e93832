import { GatewayError } from '../errors/gateway-error.js';
import { scrubCut } from '../secrets/redact.js';
import { objectOf } from '../wire/json.js';

const MAX_MESSAGE_CHARS = 2_000;
/** An upstream's code, type or param is an identifier: anything longer is not one we need to pass on whole. */
const MAX_FIELD_CHARS = 200;
/** An upstream's `error.details` object: at most this many fields kept, each list at most this many strings long. */
const MAX_DETAIL_FIELDS = 16;
const MAX_DETAIL_ITEMS = 32;
/** A detail field's name is an identifier: anything else is not kept (it could be anything, a key included). */
const DETAIL_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

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
  const details: Record<string, unknown> = {
    upstream,
    upstream_status: status,
    ...providerErrorDetails(failure.bodyText, failure.secrets),
  };

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
  param: string | undefined;
  message: string | undefined;
  /** `error.details`, as the provider sent it (Anthropic's `{error_code, ...}`; Google's list). */
  details: unknown;
}

/**
 * The provider's own error fields as `details` entries (`upstream_code`, `upstream_type`, `upstream_param`,
 * `upstream_message`), each scrubbed of the call's secrets first and cut to length after: providers echo the key
 * they were sent in any of them (`"code": "Bearer sk-..."`), and cutting first could leave a piece of it. An
 * `error.details` object (Anthropic's machine-readable cause, `{error_code, ...}`, which its SDKs branch on) is
 * `upstream_details`, kept the same way: its string, number and boolean fields and its lists of strings.
 */
export function providerErrorDetails(
  text: string,
  secrets: ReadonlyArray<string | undefined>,
): Record<string, unknown> {
  const parsed = parseProviderError(text);
  const fields = upstreamFieldDetails(
    {
      upstream_code: parsed.code,
      upstream_type: parsed.type,
      upstream_param: parsed.param,
      upstream_message: parsed.message,
    },
    secrets,
  );
  const details = detailsObject(parsed.details, secrets);
  return details ? { ...fields, upstream_details: details } : fields;
}

/**
 * An upstream's `error.details` object made fit for our `details`: at most MAX_DETAIL_FIELDS fields named as
 * identifiers, each a string (scrubbed and cut as a field is), a finite number, a boolean or a list of strings (at
 * most MAX_DETAIL_ITEMS, each the same); anything else left out. Undefined when it is no object or keeps nothing.
 */
function detailsObject(
  value: unknown,
  secrets: ReadonlyArray<string | undefined>,
): Record<string, unknown> | undefined {
  const source = objectOf(value);
  if (!source) return undefined;
  const text = (item: string): string => scrubCut(item, secrets, MAX_FIELD_CHARS);
  const kept: Record<string, unknown> = {};
  let count = 0;
  for (const [name, raw] of Object.entries(source)) {
    if (count === MAX_DETAIL_FIELDS) break;
    if (!DETAIL_NAME.test(name)) continue;
    let field: unknown;
    if (typeof raw === 'string') field = text(raw);
    else if (typeof raw === 'boolean' || (typeof raw === 'number' && Number.isFinite(raw))) field = raw;
    else if (Array.isArray(raw) && raw.every((item) => typeof item === 'string'))
      field = (raw as string[]).slice(0, MAX_DETAIL_ITEMS).map(text);
    if (field === undefined) continue;
    kept[name] = field;
    count += 1;
  }
  return count === 0 ? undefined : kept;
}

/**
 * Fields an upstream sent (`upstream_code`, `upstream_message`...) made fit for `details`: strings kept (numbers
 * as text), scrubbed of the call's secrets and then cut (a message to 2,000 characters, anything else to 200);
 * other values dropped.
 */
export function upstreamFieldDetails(
  fields: Record<string, unknown>,
  secrets: ReadonlyArray<string | undefined>,
): Record<string, string> {
  const details: Record<string, string> = {};
  for (const [name, raw] of Object.entries(fields)) {
    const value = stringOrUndefined(raw);
    if (value !== undefined)
      details[name] = scrubCut(value, secrets, name === 'upstream_message' ? MAX_MESSAGE_CHARS : MAX_FIELD_CHARS);
  }
  return details;
}

/** Reads the common provider error shapes: `{error:{message,type,code,param}}`, `{error:"..."}`, `{message}`, text. Nothing is cut here. */
function parseProviderError(bodyText: string): ProviderError {
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    const text = bodyText.trim();
    return { code: undefined, type: undefined, param: undefined, message: text || undefined, details: undefined };
  }
  const record = objectOf(body);
  const inner = objectOf(record?.error) ?? record;
  const message = typeof record?.error === 'string' ? record.error : inner?.message;
  return {
    code: stringOrUndefined(inner?.code),
    type: stringOrUndefined(inner?.type),
    param: stringOrUndefined(inner?.param),
    message: typeof message === 'string' ? message : undefined,
    details: inner?.details,
  };
}

function stringOrUndefined(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return undefined;
}
