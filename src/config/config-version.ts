import { createHash } from 'node:crypto';

/** Its own module, so a worker's live reload watch needs no config schema (zod) at start. The first 12 hex digits of the SHA-256 of the file's bytes: which file a process runs (health, reloads). */
export function configVersionOf(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 12);
}
