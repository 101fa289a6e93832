/**
 * Secret hygiene shared by the query guard, the logger and the upstream error mapper.
 * The rule (SPEC "Authentication" 1 and 3): a secret never travels in a URL and never appears in a log line or
 * an error body.
 */

export const REDACTED = '[REDACTED]';

/** Our own query parameters: never mistaken for credentials even when their names look like one (next_token). */
const OWN_PARAMETERS = new Set(['route', 'limit', 'next_token']);
const SECRET_NAMES = new Set([
  'key', 'apikey', 'api_key', 'token', 'access_token', 'refresh_token', 'id_token', 'auth', 'authorization',
  'password', 'passwd', 'pwd', 'secret', 'client_secret', 'signature', 'sig', 'x_upstream_key', 'upstream_key',
  'bearer', 'credential', 'credentials', 'private_key', 'session', 'jwt',
]);
const SECRET_SUFFIX = /(?:^|_)(?:key|token|secret|password|signature|credential)s?$/;

/** True when a query parameter's name looks like it carries a credential (any case, `-` same as `_`). */
export function isSecretParameterName(name: string): boolean {
  const normalized = name.toLowerCase().replace(/-/g, '_');
  if (OWN_PARAMETERS.has(normalized)) return false;
  return SECRET_NAMES.has(normalized) || SECRET_SUFFIX.test(normalized);
}

/** Returns the URL with the value of every credential-looking query parameter replaced, safe to log. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const parts = url.slice(q + 1).split('&');
  let changed = false;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string;
    const eq = part.indexOf('=');
    const rawName = eq === -1 ? part : part.slice(0, eq);
    let name = rawName;
    try {
      name = decodeURIComponent(rawName.replace(/\+/g, ' '));
    } catch {
      // an undecodable name is kept as is and still checked below
    }
    if (isSecretParameterName(name)) {
      parts[i] = `${rawName}=${REDACTED}`;
      changed = true;
    }
  }
  return changed ? `${url.slice(0, q)}?${parts.join('&')}` : url;
}

/**
 * Replaces known secret values wherever they occur in a text. The logger runs every line through one of these
 * as a last line of defence, after path-based redaction, so a secret that slipped into a message still never
 * reaches the log sink.
 */
export class SecretScrubber {
  private readonly secrets = new Set<string>();

  add(secret: string | undefined): void {
    // Very short values would redact ordinary words; real credentials are long.
    if (secret && secret.length >= 8) this.secrets.add(secret);
  }

  scrub(text: string): string {
    let out = text;
    for (const secret of this.secrets) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    }
    return out;
  }
}

/** Removes the given secrets from a text that came from outside (an upstream error message). */
export function scrubText(text: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4 && out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  // Providers echo keys partially masked ("sk-ab***yz"); strip anything shaped like a provider key too.
  return out.replace(/\b(?:sk|pk|rk|gsk|xai|key)-[A-Za-z0-9_*.-]{6,}/g, REDACTED);
}
