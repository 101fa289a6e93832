import { createHash } from 'node:crypto';

/** Whose key a pause holds: the upstream's configured key (every caller), or one caller's own X-Upstream-Key. */
export type PauseKeyKind = 'configured' | 'caller';

/** A pause scope, read back from its stored name. */
export interface PauseScope {
  upstream: string;
  upstreamModel: string;
  key: PauseKeyKind;
}

const CONFIGURED = 'configured';
const CALLER = 'caller:';

/**
 * The name of what one upstream 429 pauses: providers limit per model and per key, so a 429 for model A with a
 * key holds calls to A with that key, and nothing else. The name is `<upstream> <key> <upstream model>`: an
 * upstream name has no space (config: [a-z0-9_-]), nor has the key part (`configured`, or `caller:` and a
 * truncated SHA-256 of the caller's key in base64url, never the key), so the model, last, may hold anything and
 * the name still reads back (health and metrics list the pauses from the shared store).
 */
export function pauseScopeName(upstream: string, upstreamModel: string, callerKey: string | undefined): string {
  const key =
    callerKey === undefined
      ? CONFIGURED
      : `${CALLER}${createHash('sha256').update(callerKey).digest('base64url').slice(0, 22)}`;
  return `${upstream} ${key} ${upstreamModel}`;
}

/** The parts of a scope name; undefined for a name of another shape (e.g. written by an older version). */
export function parsePauseScope(name: string): PauseScope | undefined {
  const first = name.indexOf(' ');
  const second = first === -1 ? -1 : name.indexOf(' ', first + 1);
  if (first <= 0 || second === -1) return undefined;
  const key = name.slice(first + 1, second);
  if (key !== CONFIGURED && !key.startsWith(CALLER)) return undefined;
  return {
    upstream: name.slice(0, first),
    upstreamModel: name.slice(second + 1),
    key: key === CONFIGURED ? 'configured' : 'caller',
  };
}
