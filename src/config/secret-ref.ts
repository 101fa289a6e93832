import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
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

/**
 * The referenced secret, or undefined when there is none. An unset (or empty) variable and an unreadable file are
 * problems, reported at the field that named them (`fields.env`, `fields.file`).
 */
export function resolveSecretRef(
  ref: SecretRef,
  fields: { env: string; file: string },
  env: Env,
  fileDir: string,
  problems: string[],
): string | undefined {
  if (ref.env !== undefined) {
    const value = env[ref.env];
    if (!value) problems.push(`${fields.env}: environment variable ${ref.env} is not set`);
    return value || undefined;
  }
  if (ref.file !== undefined) {
    try {
      return readFileSync(resolve(fileDir, ref.file), 'utf8').trim();
    } catch {
      problems.push(`${fields.file}: cannot read ${ref.file}`);
    }
  }
  return undefined;
}
