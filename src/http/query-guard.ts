import { GatewayError } from '../errors/gateway-error.js';
import { isSecretParameterName } from '../observability/redact.js';

/**
 * SPEC "Authentication" rule 1: secrets never travel in a URL. A request whose query string has a parameter that
 * looks like a credential is refused even when its headers are valid, because the URL has already been written
 * to proxies' and browsers' histories: the caller must rotate that secret, and must learn not to do it again.
 */
export function refuseCredentialsInQuery(url: string): void {
  const q = url.indexOf('?');
  if (q === -1) return;
  const offending: string[] = [];
  for (const part of url.slice(q + 1).split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const raw = eq === -1 ? part : part.slice(0, eq);
    let name = raw;
    try {
      name = decodeURIComponent(raw.replace(/\+/g, ' '));
    } catch {
      // keep the raw name
    }
    if (isSecretParameterName(name) && !offending.includes(name)) offending.push(name);
  }
  if (offending.length > 0) {
    throw new GatewayError('credentials_in_query', {
      parameters: offending,
      hint: 'send the admin token as "Authorization: Bearer <token>" and upstream keys as "X-Upstream-Key"; rotate any secret that was sent in a URL',
    });
  }
}
