/**
 * Secret hygiene shared by the query guard, the logger and the upstream error mapper.
 * The rule (SPEC "Authentication" 1 and 3): a secret never travels in a URL and never appears in a log line or
 * an error body.
 */

export const REDACTED = '[REDACTED]';

/** Our own query parameters: never mistaken for credentials even when their names look like one (next_token). */
const OWN_PARAMETERS = new Set(['route', 'limit', 'next_token']);
/** Our own parameters whose values are logged as they are when they have their expected shape (never a secret). */
const LOGGED_AS_IS: ReadonlyMap<string, RegExp> = new Map([
  ['route', /^[a-z_]{1,32}$/],
  ['limit', /^\d{1,4}$/],
]);
const PRESIGNED_WORD = /presigned/i;
const PLAIN_ROUTE_QUERY = /\?route=[a-z_]{1,32}$/y;
const SECRET_NAMES = new Set([
  'key',
  'apikey',
  'api_key',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'auth',
  'authorization',
  'password',
  'passwd',
  'pwd',
  'secret',
  'client_secret',
  'signature',
  'sig',
  'x_upstream_key',
  'upstream_key',
  'bearer',
  'credential',
  'credentials',
  'private_key',
  'session',
  'jwt',
]);
const SECRET_SUFFIX = /(?:^|_)(?:key|token|secret|password|signature|credential)s?$/;

/**
 * True when a query parameter's name looks like it carries a credential. The name is normalised first, the
 * way frameworks read it, so no spelling slips past: percent-decoded (twice over too), brackets taken apart
 * (`key[]`, `token[a]`, `api_key[0]`, `a[token]`: PHP, Rails and qs read the part before or inside them), NUL
 * and other control characters dropped, camelCase split, and every other separator (space, `+`, `.`, `-`...)
 * the same as `_`, leading and trailing ones ignored, any case.
 */
export function isSecretParameterName(name: string): boolean {
  if (OWN_PARAMETERS.has(name)) return false; // the common case (`route=chat`) without any work
  const parts = decodeFully(name)
    .split(/[[\]]+/)
    .map(normalizeName)
    .filter((part) => part !== '');
  if (parts.length === 1 && OWN_PARAMETERS.has(parts[0] as string)) return false;
  return parts.some((part) => SECRET_NAMES.has(part) || SECRET_SUFFIX.test(part));
}

function normalizeName(part: string): string {
  return part
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '');
}

/** Percent-decodes until nothing changes (at most three rounds): `%2574oken` is not a way around the check. */
function decodeFully(name: string): string {
  let current = name;
  for (let round = 0; round < 3; round++) {
    let next: string;
    try {
      next = decodeURIComponent(current.replace(/\+/g, ' '));
    } catch {
      return current; // an undecodable name is kept as is and still checked
    }
    if (next === current) return current;
    current = next;
  }
  return current;
}

interface QueryParameter {
  /** The `name=value` text as it appears in the URL. */
  raw: string;
  /** The name as it appears in the URL (still percent-encoded). */
  rawName: string;
  /** The decoded name (the raw one when it cannot be decoded). */
  name: string;
}

/** The parameters of a URL's query string, in order, with their names decoded. */
export function queryParameters(url: string): QueryParameter[] {
  const q = url.indexOf('?');
  if (q === -1) return [];
  return url
    .slice(q + 1)
    .split('&')
    .map((raw) => {
      const eq = raw.indexOf('=');
      const rawName = eq === -1 ? raw : raw.slice(0, eq);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        // an undecodable name is kept as is and still checked
      }
      return { raw, rawName, name };
    });
}

/**
 * The URL safe to log: every query value is replaced, whatever its parameter is named (a name the guard does
 * not know may still carry a secret), except `route` and `limit` when they have their plain shape. A segment
 * with no `=` is redacted whole (`?sk-...` is a value), unless it is one of our parameter names.
 */
export function redactUrl(url: string): string {
  url = redactPresigned(url);
  const q = url.indexOf('?');
  if (q === -1) return url;
  // The common case, `?route=chat`, is logged as it is without splitting anything (this runs on every request).
  PLAIN_ROUTE_QUERY.lastIndex = q;
  if (PLAIN_ROUTE_QUERY.test(url)) return url;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((raw) => {
      const eq = raw.indexOf('=');
      if (eq === -1) return raw === '' || OWN_PARAMETERS.has(raw) ? raw : REDACTED;
      const name = raw.slice(0, eq);
      const value = raw.slice(eq + 1);
      if (value === '' || LOGGED_AS_IS.get(name)?.test(value) === true) return raw;
      return `${name}=${REDACTED}`;
    })
    .join('&');
  return `${url.slice(0, q)}?${query}`;
}

/**
 * A presigned upload URL's last segment is a capability (docs/files.md): never logged. The router decodes the path
 * before it matches it (`/%70resigned/<token>` is the same route as `/presigned/<token>`), so the segments are
 * looked at decoded, in any case: whatever follows a `presigned` segment, or starts at a segment that holds the word
 * (`presigned%2F<token>`), is replaced up to the query. A URL with neither `%` nor the word costs two scans and no
 * copy (this runs on every access line).
 */
function redactPresigned(url: string): string {
  if (!url.includes('%') && !PRESIGNED_WORD.test(url)) return url;
  const q = url.indexOf('?');
  const segments = (q === -1 ? url : url.slice(0, q)).split('/');
  for (let i = 0; i < segments.length; i++) {
    const decoded = decodeEscapes(segments[i] as string).toLowerCase();
    if (!decoded.includes('presigned')) continue;
    const whole = decoded === 'presigned';
    if (whole && i === segments.length - 1) return url; // `.../presigned` with no token after it
    const kept = segments.slice(0, whole ? i + 1 : i).join('/');
    return `${kept}/${REDACTED}${q === -1 ? '' : url.slice(q)}`;
  }
  return url;
}

const ESCAPE = /%([0-9A-Fa-f]{2})/g;

/**
 * Every `%XX` of a path segment decoded as one byte (a character), three rounds at most (`%2570` too): unlike
 * decodeURIComponent it never gives up on the whole segment for one bad escape or one non-UTF-8 byte beside it.
 */
function decodeEscapes(segment: string): string {
  let current = segment;
  for (let round = 0; round < 3 && current.includes('%'); round++) {
    const next = current.replace(ESCAPE, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === current) break;
    current = next;
  }
  return current;
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

/**
 * The shortest piece of a secret that is scrubbed on its own. A provider that echoes a key may cut it (at its own
 * truncation point or ours) or show only part of it; eight characters of a random key are still far too many to
 * leave in an answer, and no ordinary word matches eight characters of one by chance.
 */
const SECRET_PIECE_CHARS = 8;

/**
 * Removes the given secrets from a text that came from outside (an upstream's error message, code, type or a
 * frame): every whole occurrence, and every run of at least eight characters that also occurs in a secret (a
 * key cut at a truncation point, or partly masked), and anything shaped like a provider key. Run it BEFORE cutting a
 * text to length, so the cut cannot turn a whole secret into a piece (scrubCut does both). Error paths only: it
 * costs a set lookup per character per secret; an answer is scrubbed by key-scrubber.ts instead.
 */
export function scrubText(text: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = text;
  for (const secret of secrets) {
    if (!secret || secret.length < 4) continue;
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    if (secret.length >= SECRET_PIECE_CHARS) out = scrubPieces(out, secret);
  }
  // Providers echo keys partially masked ("sk-ab***yz"); strip anything shaped like a provider key too.
  return out.replace(/\b(?:sk|pk|rk|gsk|xai|key)-[A-Za-z0-9_*.-]{6,}/g, REDACTED);
}

/**
 * scrubText over a text of any length, cut to `max` characters: only the first `max` + the longest secret's length
 * characters are scrubbed (a secret that begins before the cut ends within them), so a message of megabytes from
 * an upstream costs no more than one of `max` characters.
 */
export function scrubCut(text: string, secrets: ReadonlyArray<string | undefined>, max: number): string {
  const longest = secrets.reduce((most, secret) => Math.max(most, secret?.length ?? 0), 0);
  return scrubText(text.slice(0, max + longest), secrets).slice(0, max);
}

/** Replaces every maximal run of `text` covered by 8-character windows that also occur in `secret`. */
function scrubPieces(text: string, secret: string): string {
  if (text.length < SECRET_PIECE_CHARS) return text;
  const windows = new Set<string>();
  for (let i = 0; i + SECRET_PIECE_CHARS <= secret.length; i++) windows.add(secret.slice(i, i + SECRET_PIECE_CHARS));
  let out = '';
  let copied = 0; // text[0, copied) is decided and in `out`
  let runStart = -1;
  let runEnd = -1;
  for (let i = 0; i + SECRET_PIECE_CHARS <= text.length; i++) {
    if (!windows.has(text.slice(i, i + SECRET_PIECE_CHARS))) continue;
    if (runStart !== -1 && i <= runEnd) {
      runEnd = i + SECRET_PIECE_CHARS; // overlaps or touches the run: extend it
      continue;
    }
    if (runStart !== -1) {
      out += text.slice(copied, runStart) + REDACTED;
      copied = runEnd;
    }
    runStart = i;
    runEnd = i + SECRET_PIECE_CHARS;
  }
  if (runStart === -1) return text;
  return out + text.slice(copied, runStart) + REDACTED + text.slice(runEnd);
}
