import { randomBytes } from 'node:crypto';

/** Ids in OpenAI's style: a type prefix and 48 hex digits (192 random bits: unguessable, so an id is no handle). */
export function newId(prefix: 'resp' | 'msg' | 'fc' | 'fco'): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}
