import { randomUUID } from 'node:crypto';

/**
 * Ids in OpenAI's style: a type prefix and 32 hex digits (a random UUID's 122 random bits: unguessable, so an id
 * is no handle). randomUUID draws from a cached entropy pool: a tenth of the cost of randomBytes per id, measured
 * on the Responses route (docs/benchmarks.md).
 */
export function newId(prefix: 'resp' | 'msg' | 'fc' | 'fco' | 'ctc' | 'ctco'): string {
  return `${prefix}_${randomUUID().replaceAll('-', '')}`;
}
