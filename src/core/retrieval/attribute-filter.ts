import { GatewayError } from '../../errors/gateway-error.js';
import type { VectorAttributes } from '../../store/vector-contract.js';
import type { AttributeFilter, ComparisonFilter, CompoundFilter } from './file-search.js';

/**
 * OpenAI's `filters` on a vector store file's attributes (a search's and the `file_search` tool's): read from
 * untrusted JSON into the typed `AttributeFilter`, and evaluated on a file's attributes.
 *
 * Semantics (OpenAI's, where it documents them; ours where it does not):
 * - `eq` / `ne`: strict, type and value (`"1"` is not `1`, `true` is not `"true"`); a missing key: `eq` false,
 *   `ne` true.
 * - `gt` / `gte` / `lt` / `lte`: numbers only. The filter's value must be a number (a string is a 400: comparing
 *   strings by code unit would look like it worked on dates and versions and silently mislead); an attribute that
 *   is not a number (a string, a boolean, missing) does not match.
 * - `in` / `nin`: membership in a list of strings and numbers, strict like `eq`; a missing key: `in` false, `nin` true.
 * - `and` / `or`: every / some of its filters (at least one each).
 */

/** How large a filter may be: it comes from a caller and is evaluated on every file of the searched stores. */
export const FILTER_BOUNDS = {
  /** Levels of nesting, the top filter being level 1. */
  maxDepth: 8,
  /** Filters in all (compound and comparison). */
  maxNodes: 100,
  /** Items of an `in` / `nin` list. */
  maxListItems: 100,
  /** Characters of an attribute key (attributes themselves allow 64). */
  maxKeyLength: 64,
  /** Characters of a string value (attributes' strings are at most 512). */
  maxStringLength: 512,
} as const;

export const COMPARISON_TYPES: readonly ComparisonFilter['type'][] = [
  'eq',
  'ne',
  'gt',
  'gte',
  'lt',
  'lte',
  'in',
  'nin',
];
export const COMPOUND_TYPES: readonly CompoundFilter['type'][] = ['and', 'or'];
const FILTER_TYPES: readonly string[] = [...COMPARISON_TYPES, ...COMPOUND_TYPES];
const RANGE_TYPES: ReadonlySet<string> = new Set(['gt', 'gte', 'lt', 'lte']);

/** What is wrong with a filter: the shape of one entry of a 400's `details.errors` (http/validation-details.ts). */
export interface FilterProblem {
  /** Where, from the request body's root: `filters.filters[1].value`. */
  field: string;
  problem: string;
  allowed?: unknown[];
}

export type FilterReading = { ok: true; filter: AttributeFilter } | { ok: false; problem: FilterProblem };

/**
 * Reads a filter from untrusted JSON: the typed filter, or the first problem with its field path from `field` (the
 * request's name for it: `filters`, `tools[0].filters`). Fields other than the ones read are ignored.
 */
export function readAttributeFilter(value: unknown, field = 'filters'): FilterReading {
  const reader = new FilterReader();
  const filter = reader.read(value, field, 1);
  return filter === undefined
    ? { ok: false, problem: reader.problem ?? { field, problem: 'is invalid' } }
    : { ok: true, filter };
}

/** The 400 a filter's problem is answered with: `validation_failed`, the problem in `details.errors` like any field's. */
export function filterProblemError(problem: FilterProblem): GatewayError {
  return new GatewayError('validation_failed', { errors: [problem] });
}

class FilterReader {
  problem: FilterProblem | undefined;
  private nodes = 0;

  read(value: unknown, field: string, depth: number): AttributeFilter | undefined {
    if (depth > FILTER_BOUNDS.maxDepth) return this.fail(field, `nests deeper than ${FILTER_BOUNDS.maxDepth} levels`);
    if (++this.nodes > FILTER_BOUNDS.maxNodes)
      return this.fail(field, `is past ${FILTER_BOUNDS.maxNodes} filters in all`);
    if (!isObject(value)) return this.fail(field, 'must be an object');
    const type = value.type;
    if (type === undefined) return this.fail(`${field}.type`, 'is required', FILTER_TYPES);
    if (typeof type !== 'string' || !FILTER_TYPES.includes(type))
      return this.fail(`${field}.type`, 'must be one of the allowed values', FILTER_TYPES);
    if (type === 'and' || type === 'or') return this.compound(type, value, field, depth);
    return this.comparison(type as ComparisonFilter['type'], value, field);
  }

  private compound(
    type: CompoundFilter['type'],
    value: Record<string, unknown>,
    field: string,
    depth: number,
  ): CompoundFilter | undefined {
    const list = value.filters;
    const at = `${field}.filters`;
    if (list === undefined) return this.fail(at, 'is required');
    if (!Array.isArray(list)) return this.fail(at, 'must be an array');
    if (list.length === 0) return this.fail(at, `must hold at least one filter for ${type}`);
    // Checked before a first item is read: a list of a million costs nothing.
    if (this.nodes + list.length > FILTER_BOUNDS.maxNodes)
      return this.fail(at, `is past ${FILTER_BOUNDS.maxNodes} filters in all`);
    const filters: AttributeFilter[] = [];
    for (let i = 0; i < list.length; i++) {
      const child = this.read(list[i] as unknown, `${at}[${i}]`, depth + 1);
      if (child === undefined) return undefined;
      filters.push(child);
    }
    return { type, filters };
  }

  private comparison(
    type: ComparisonFilter['type'],
    value: Record<string, unknown>,
    field: string,
  ): ComparisonFilter | undefined {
    const key = value.key;
    if (key === undefined) return this.fail(`${field}.key`, 'is required');
    if (typeof key !== 'string' || key.length === 0) return this.fail(`${field}.key`, 'must be a non-empty string');
    if (key.length > FILTER_BOUNDS.maxKeyLength)
      return this.fail(`${field}.key`, `must be at most ${FILTER_BOUNDS.maxKeyLength} characters`);
    const at = `${field}.value`;
    const operand = value.value;
    if (operand === undefined) return this.fail(at, 'is required');
    if (type === 'in' || type === 'nin') {
      if (!Array.isArray(operand)) return this.fail(at, `must be an array of strings and numbers for ${type}`);
      if (operand.length > FILTER_BOUNDS.maxListItems)
        return this.fail(at, `must hold at most ${FILTER_BOUNDS.maxListItems} items`);
      const items: (string | number)[] = [];
      for (let i = 0; i < operand.length; i++) {
        const item = operand[i] as unknown;
        if (typeof item === 'string') {
          if (item.length > FILTER_BOUNDS.maxStringLength)
            return this.fail(`${at}[${i}]`, `must be at most ${FILTER_BOUNDS.maxStringLength} characters`);
        } else if (typeof item !== 'number' || !Number.isFinite(item)) {
          return this.fail(`${at}[${i}]`, 'must be a string or a finite number');
        }
        items.push(item);
      }
      return { type, key, value: items };
    }
    if (RANGE_TYPES.has(type)) {
      if (typeof operand !== 'number' || !Number.isFinite(operand))
        return this.fail(at, `must be a finite number for ${type} (range comparisons are numeric)`);
      return { type, key, value: operand };
    }
    if (typeof operand === 'string') {
      if (operand.length > FILTER_BOUNDS.maxStringLength)
        return this.fail(at, `must be at most ${FILTER_BOUNDS.maxStringLength} characters`);
      return { type, key, value: operand };
    }
    if (typeof operand === 'boolean' || (typeof operand === 'number' && Number.isFinite(operand)))
      return { type, key, value: operand };
    return this.fail(at, `must be a string, a finite number or a boolean for ${type}`);
  }

  private fail(field: string, problem: string, allowed?: readonly string[]): undefined {
    this.problem = allowed ? { field, problem, allowed: [...allowed] } : { field, problem };
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A filter made ready to test many files: `in` / `nin` lists become sets (strict: a Set tells `"1"` from `1`). */
export type AttributeMatcher = (attributes: VectorAttributes) => boolean;

export function compileFilter(filter: AttributeFilter): AttributeMatcher {
  if ('filters' in filter) {
    const parts = filter.filters.map(compileFilter);
    return filter.type === 'and'
      ? (attributes) => parts.every((part) => part(attributes))
      : (attributes) => parts.some((part) => part(attributes));
  }
  return compileComparison(filter);
}

function compileComparison(filter: ComparisonFilter): AttributeMatcher {
  const { key, value } = filter;
  const read = (attributes: VectorAttributes) => (Object.hasOwn(attributes, key) ? attributes[key] : undefined);
  switch (filter.type) {
    case 'eq':
      return (attributes) => read(attributes) === value;
    case 'ne':
      return (attributes) => read(attributes) !== value;
    case 'in':
    case 'nin': {
      const members = new Set<unknown>(Array.isArray(value) ? value : [value]);
      return filter.type === 'in'
        ? (attributes) => {
            const found = read(attributes);
            return found !== undefined && members.has(found);
          }
        : (attributes) => {
            const found = read(attributes);
            return found === undefined || !members.has(found);
          };
    }
    default: {
      const compare = RANGE_COMPARE[filter.type];
      return (attributes) => {
        const found = read(attributes);
        return typeof found === 'number' && typeof value === 'number' && compare(found, value);
      };
    }
  }
}

const RANGE_COMPARE: Record<'gt' | 'gte' | 'lt' | 'lte', (a: number, b: number) => boolean> = {
  gt: (a, b) => a > b,
  gte: (a, b) => a >= b,
  lt: (a, b) => a < b,
  lte: (a, b) => a <= b,
};

/** Whether a file with these attributes passes the filter (one file; `compileFilter` for many). */
export function matchesFilter(filter: AttributeFilter, attributes: VectorAttributes): boolean {
  return compileFilter(filter)(attributes);
}
