import { GatewayError } from '../../errors/gateway-error.js';
import type { VectorAttributes } from '../../store/vector-contract.js';

/**
 * The checks of a Vector Stores API body's fields (docs/retrieval.md), each refusal a `400 validation_failed`
 * naming the field and the problem. Bodies are untrusted JSON: every size is bounded here.
 */

export const MAX_NAME_CHARS = 256;
export const MAX_ATTRIBUTE_KEYS = 16;
export const MAX_ATTRIBUTE_KEY_CHARS = 64;
export const MAX_ATTRIBUTE_STRING_CHARS = 512;
export const MAX_METADATA_KEYS = 16;
export const MAX_EXPIRY_DAYS = 365;

export function invalid(field: string, problem: string): GatewayError {
  return new GatewayError('validation_failed', { errors: [{ field, problem }] });
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The body as an object (a JSON array, a string... is refused). */
export function bodyObject(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (!isObject(body)) throw invalid('body', 'must be a JSON object');
  return body;
}

export function optionalString(body: Record<string, unknown>, field: string, maxChars: number): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length > maxChars) {
    throw invalid(field, `must be a string of at most ${maxChars} characters`);
  }
  return value;
}

/** OpenAI's `metadata`: at most 16 pairs, keys of at most 64 characters, string values of at most 512. */
export function metadataOf(value: unknown, field = 'metadata'): Record<string, string> | null {
  if (value === null) return null;
  if (!isObject(value)) throw invalid(field, 'must be an object of strings or null');
  const entries = Object.entries(value);
  if (entries.length > MAX_METADATA_KEYS) throw invalid(field, `at most ${MAX_METADATA_KEYS} keys`);
  for (const [key, item] of entries) {
    if (key.length > 64) throw invalid(`${field}.${key.slice(0, 64)}`, 'keys are at most 64 characters');
    if (typeof item !== 'string' || item.length > 512) {
      throw invalid(`${field}.${key}`, 'values are strings of at most 512 characters');
    }
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/** A file's `attributes`: at most 16 keys; strings of at most 512 characters, finite numbers, booleans. */
export function attributesOf(value: unknown, field = 'attributes'): VectorAttributes {
  if (value === null || value === undefined) return {};
  if (!isObject(value)) throw invalid(field, 'must be an object of strings, numbers and booleans');
  const entries = Object.entries(value);
  if (entries.length > MAX_ATTRIBUTE_KEYS) throw invalid(field, `at most ${MAX_ATTRIBUTE_KEYS} keys`);
  for (const [key, item] of entries) {
    if (key.length === 0 || key.length > MAX_ATTRIBUTE_KEY_CHARS) {
      throw invalid(`${field}.${key.slice(0, 64)}`, `keys are 1 to ${MAX_ATTRIBUTE_KEY_CHARS} characters`);
    }
    const ok =
      typeof item === 'boolean' ||
      (typeof item === 'number' && Number.isFinite(item)) ||
      (typeof item === 'string' && item.length <= MAX_ATTRIBUTE_STRING_CHARS);
    if (!ok) {
      throw invalid(
        `${field}.${key}`,
        `must be a string of at most ${MAX_ATTRIBUTE_STRING_CHARS} characters, a finite number or a boolean`,
      );
    }
  }
  return Object.fromEntries(entries) as VectorAttributes;
}

/** `expires_after: {anchor: "last_active_at", days}` → days (1..365); null: never. */
export function expiryDaysOf(value: unknown, field = 'expires_after'): number | null {
  if (value === null) return null;
  if (!isObject(value)) throw invalid(field, 'must be {anchor: "last_active_at", days} or null');
  if (value.anchor !== 'last_active_at') throw invalid(`${field}.anchor`, 'must be "last_active_at"');
  const days = value.days;
  if (typeof days !== 'number' || !Number.isInteger(days) || days < 1 || days > MAX_EXPIRY_DAYS) {
    throw invalid(`${field}.days`, `a whole number of days from 1 to ${MAX_EXPIRY_DAYS}`);
  }
  return days;
}

/** A list of Files API ids (`file_ids`): strings, each once, at most `max`. */
export function fileIdsOf(value: unknown, field: string, max: number): string[] {
  if (!Array.isArray(value)) throw invalid(field, 'must be an array of file ids');
  if (value.length > max) throw invalid(field, `at most ${max} files`);
  const seen = new Set<string>();
  value.forEach((id, i) => {
    if (typeof id !== 'string' || id.length === 0 || id.length > 128) {
      throw invalid(`${field}[${i}]`, 'must be a file id');
    }
    if (seen.has(id)) throw invalid(`${field}[${i}]`, `${id} is named twice`);
    seen.add(id);
  });
  return [...seen];
}

/** One of `allowed`, or undefined when absent. */
export function oneOf<T extends string>(value: unknown, field: string, allowed: readonly T[]): T | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalid(field, `must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}
