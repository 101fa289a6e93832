import { GatewayError } from '../errors/gateway-error.js';
import { isSecretParameterName, queryParameters } from '../secrets/redact.js';
import type { CallerApi } from './error-shape.js';

const HINT =
  'send the admin token as "Authorization: Bearer <token>" and upstream keys as "X-Upstream-Key"; rotate any secret that was sent in a URL';

/**
 * SPEC "Authentication" rule 1: secrets never travel in a URL. A request whose query string has a parameter that
 * looks like a credential is refused even when its headers are valid, because the URL has already been written
 * to proxies' and browsers' histories: the caller must rotate that secret, and must learn not to do it again.
 * The query names of the API the request called (`api`: Google's `pageToken`) are its own, never credentials; the
 * refusal's hint is that API's when it has one.
 */
export function refuseCredentialsInQuery(url: string, api?: CallerApi): void {
  if (!url.includes('?')) return;
  const own = api?.ownQuery;
  const offending = [
    ...new Set(
      queryParameters(url)
        .filter((p) => p.raw !== '' && own?.has(p.name) !== true && isSecretParameterName(p.name))
        .map((p) => p.name),
    ),
  ];
  if (offending.length > 0) {
    throw new GatewayError('credentials_in_query', { parameters: offending, hint: api?.credentialHint ?? HINT });
  }
}
