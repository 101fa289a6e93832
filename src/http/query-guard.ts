import { GatewayError } from '../errors/gateway-error.js';
import { isSecretParameterName, queryParameters } from '../secrets/redact.js';

/**
 * SPEC "Authentication" rule 1: secrets never travel in a URL. A request whose query string has a parameter that
 * looks like a credential is refused even when its headers are valid, because the URL has already been written
 * to proxies' and browsers' histories: the caller must rotate that secret, and must learn not to do it again.
 */
export function refuseCredentialsInQuery(url: string): void {
  if (!url.includes('?')) return;
  const offending = [
    ...new Set(
      queryParameters(url)
        .filter((p) => p.raw !== '' && isSecretParameterName(p.name))
        .map((p) => p.name),
    ),
  ];
  if (offending.length > 0) {
    throw new GatewayError('credentials_in_query', {
      parameters: offending,
      hint: 'send the admin token as "Authorization: Bearer <token>" and upstream keys as "X-Upstream-Key"; rotate any secret that was sent in a URL',
    });
  }
}
