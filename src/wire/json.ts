/**
 * How the wire modules read JSON that someone else wrote (a caller's request past its schema, an upstream's answer or
 * event): an object's fields are `unknown` until each is read by its type. Nothing here casts; a field of the wrong
 * type reads as absent.
 */

/** A JSON object as it came: any fields, none of them trusted yet. */
export interface JsonObject {
  [field: string]: unknown;
}

/** Whether `value` is a JSON object (not null, not an array). */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` when it is a JSON object, else undefined: the narrow read of a nested object. */
export function objectOf(value: unknown): JsonObject | undefined {
  return isJsonObject(value) ? value : undefined;
}

/** The text of a field sent as a string (an id, a name): '' for anything else, never String() of a foreign object. */
export function textField(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/**
 * The fields of a JSON object or array: the object itself, `{}` for an array (it has none of the named fields a
 * reader looks for), undefined for anything else. For readers that take an array as an object without fields.
 */
export function fieldsOf(value: unknown): JsonObject | undefined {
  return Array.isArray(value) ? {} : objectOf(value);
}
