/**
 * Suite-wide capture for the secrets-hygiene check: when GW_TEST_CAPTURE_DIR is set (scripts/run-tests.mjs sets
 * it for a full run), every gateway log line, every response body the tests read, and every secret the tests
 * used (tokens, keys, passwords, signing secrets) are appended to files there. After the suite,
 * test/secrets-hygiene.check.ts searches all captured text for every secret.
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.GW_TEST_CAPTURE_DIR;

export function captureText(kind: 'logs' | 'bodies', text: string): void {
  if (!dir || text === '') return;
  appendFileSync(join(dir, `${kind}-${process.pid}.txt`), `${text}\n`);
}

/** Values that must never appear in a log line or a response body. */
export function captureSecrets(values: ReadonlyArray<string | undefined>): void {
  if (!dir) return;
  const real = values.filter((v): v is string => typeof v === 'string' && v.length >= 12);
  if (real.length > 0)
    appendFileSync(join(dir, `secrets-${process.pid}.txt`), `${real.map((v) => JSON.stringify(v)).join('\n')}\n`);
}

/** The credential in an Authorization header: a bearer token, or a Basic password. */
export function credentialOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  if (/^basic /i.test(header)) {
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    return decoded.slice(decoded.indexOf(':') + 1);
  }
  return header.replace(/^bearer\s+/i, '');
}
