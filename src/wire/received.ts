import { isJsonObject } from './json.js';

/**
 * An object as it came over the wire from someone else (an upstream's answer, a caller's body past its schema):
 * the wire type's field names, each of unknown type until checked. Reading `candidate.finishReason` then names a
 * field the wire module declares (a typo does not compile) without trusting what it holds.
 */
export type Received<T> = { readonly [K in keyof T]?: unknown };

/** Whether `value` is a JSON object (not null, not an array): what `Received<T>` is read from (one check: json.ts). */
export { isJsonObject };

/** `value` read as a `T` that came over the wire (every field still to be checked), or undefined when it is not an object. */
export function received<T>(value: unknown): Received<T> | undefined {
  return isJsonObject(value) ? (value as Received<T>) : undefined;
}
