import { GatewayError } from '../errors/gateway-error.js';

/**
 * Versioning (SPEC "Versioning"): by path, `/v1/`, or by media type, `Accept: application/vnd.llmgw.v1+json`.
 * The vendor name is `llmgw`. An Accept header that names our vendor but only versions we do not serve is
 * answered 406; Accept headers that do not mention our vendor are not version requests and are ignored.
 */
export const VENDOR = 'llmgw';
export const SUPPORTED_VERSIONS = ['v1'] as const;
export const VENDOR_MEDIA_TYPE_V1 = `application/vnd.${VENDOR}.v1+json`;

const VENDOR_PREFIX = `application/vnd.${VENDOR}`;
const VENDOR_TYPE = /application\/vnd\.llmgw(?:\.([^+;,\s]*))?(\+[a-z]+)?/gi;

/** `undefined`: no version asked for; `'v1'`: asked for v1 (answer in the vendor media type). Throws 406 otherwise. */
export function negotiateVersion(accept: string | undefined): 'v1' | undefined {
  if (accept === undefined || !accept.toLowerCase().includes(VENDOR_PREFIX)) return undefined;
  const requested: string[] = [];
  for (const match of accept.matchAll(VENDOR_TYPE)) {
    const version = (match[1] ?? '').toLowerCase();
    const suffix = (match[2] ?? '').toLowerCase();
    if (version === 'v1' && suffix === '+json') return 'v1';
    requested.push(`${version || '(none)'}${suffix}`);
  }
  throw new GatewayError('unsupported_version', {
    requested,
    supported: [...SUPPORTED_VERSIONS],
    media_type: VENDOR_MEDIA_TYPE_V1,
  });
}
