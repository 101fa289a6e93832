import { resolve } from 'node:path';
import { FILE_BOUNDS, readBoundedFileSync, readFailure } from './bounded-file.js';
import type { Env } from './env.js';

/**
 * A secret the config file names by reference, never by value: an environment variable, or a file (its path
 * relative to the config file; its content trimmed). Upstream keys, webhook signing secrets and Basic users'
 * password hashes all go through here.
 */
export interface SecretRef {
  env?: string | undefined;
  file?: string | undefined;
}

export const EMPTY_SECRET = 'is empty';

/**
 * Why a secret's text cannot be one (undefined: it can). A secret is one line of printable ASCII: surrounding
 * whitespace (a final line break) is trimmed first. Every secret here ends up in an HTTP header, an HMAC key or a
 * password hash: a second line means the wrong file (`/etc/passwd`), and a control character would make every
 * upstream call fail with a misleading transport error instead of this message. Never says what the text holds.
 */
export function secretProblem(text: string): string | undefined {
  if (text.length === 0) return EMPTY_SECRET;
  let controls = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a || c === 0x0d) return 'holds more than one line (a secret is one line: the secret itself)';
    if (c < 0x20 || c > 0x7e) controls = true;
  }
  return controls
    ? 'holds a character that is not printable ASCII (a control character or a non-ASCII one)'
    : undefined;
}

/**
 * A secret file's one line (trimmed), checked; throws FileReadError (or an errno error) when the file cannot be
 * read, and an Error whose message is secretProblem's when its text is not a secret.
 */
export function readSecretFile(path: string): string {
  const text = readBoundedFileSync(path, FILE_BOUNDS.secret).toString('latin1').trim();
  const problem = secretProblem(text);
  if (problem) throw new SecretTextError(problem);
  return text;
}

export class SecretTextError extends Error {}

/**
 * The referenced secret, or undefined when there is none. An unset (or empty) variable, an unreadable file (not
 * a regular file, larger than 64 KiB) and a value that is not one line of printable ASCII are problems, reported
 * at the field that named them (`fields.env`, `fields.file`) with the variable's or file's name, never the value.
 */
export function resolveSecretRef(
  ref: SecretRef,
  fields: { env: string; file: string },
  env: Env,
  fileDir: string,
  problems: string[],
): string | undefined {
  if (ref.env !== undefined) {
    const value = env[ref.env]?.trim();
    if (!value) {
      problems.push(`${fields.env}: environment variable ${ref.env} is not set`);
      return undefined;
    }
    const problem = secretProblem(value);
    if (problem) problems.push(`${fields.env}: environment variable ${ref.env} ${problem}`);
    return problem ? undefined : value;
  }
  if (ref.file !== undefined) {
    try {
      return readSecretFile(resolve(fileDir, ref.file));
    } catch (error) {
      if (error instanceof SecretTextError) problems.push(`${fields.file}: ${ref.file} ${error.message}`);
      else problems.push(`${fields.file}: cannot read ${ref.file} (${readFailure(error)})`);
    }
  }
  return undefined;
}
