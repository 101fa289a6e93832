/**
 * OpenAI's `filters` (core/retrieval/attribute-filter.ts): read from untrusted JSON with a problem naming the exact
 * field, bounded, and evaluated with OpenAI's semantics (strict eq/ne, numeric ranges, in/nin, missing keys, and/or).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  FILTER_BOUNDS,
  filterProblemError,
  matchesFilter,
  readAttributeFilter,
  type FilterProblem,
} from '../../../src/core/retrieval/attribute-filter.js';
import type { AttributeFilter } from '../../../src/core/retrieval/file-search.js';

const ATTRIBUTES = { region: 'eu', year: 2024, draft: false, score: 0.5, code: '7' };

function parsed(value: unknown): AttributeFilter {
  const reading = readAttributeFilter(value);
  assert.ok(reading.ok, JSON.stringify(reading));
  return reading.filter;
}

function problemOf(value: unknown, field?: string): FilterProblem {
  const reading = field === undefined ? readAttributeFilter(value) : readAttributeFilter(value, field);
  assert.equal(reading.ok, false, 'expected a problem');
  return (reading as { problem: FilterProblem }).problem;
}

const matches = (filter: unknown, attributes: Record<string, string | number | boolean> = ATTRIBUTES) =>
  matchesFilter(parsed(filter), attributes);

test('eq and ne are strict on type and value; a missing key: eq false, ne true', () => {
  assert.equal(matches({ type: 'eq', key: 'region', value: 'eu' }), true);
  assert.equal(matches({ type: 'eq', key: 'region', value: 'us' }), false);
  assert.equal(matches({ type: 'eq', key: 'code', value: 7 }), false, '"7" is not 7');
  assert.equal(matches({ type: 'eq', key: 'year', value: 2024 }), true);
  assert.equal(matches({ type: 'eq', key: 'draft', value: false }), true);
  assert.equal(matches({ type: 'eq', key: 'draft', value: 'false' }), false);
  assert.equal(matches({ type: 'eq', key: 'missing', value: 'x' }), false);
  assert.equal(matches({ type: 'ne', key: 'region', value: 'eu' }), false);
  assert.equal(matches({ type: 'ne', key: 'region', value: 'us' }), true);
  assert.equal(matches({ type: 'ne', key: 'code', value: 7 }), true, 'another type is not equal');
  assert.equal(matches({ type: 'ne', key: 'missing', value: 'x' }), true);
});

test('gt, gte, lt, lte compare numbers; a string, boolean or missing attribute does not match', () => {
  assert.equal(matches({ type: 'gt', key: 'year', value: 2023 }), true);
  assert.equal(matches({ type: 'gt', key: 'year', value: 2024 }), false);
  assert.equal(matches({ type: 'gte', key: 'year', value: 2024 }), true);
  assert.equal(matches({ type: 'lt', key: 'score', value: 0.75 }), true);
  assert.equal(matches({ type: 'lt', key: 'score', value: 0.5 }), false);
  assert.equal(matches({ type: 'lte', key: 'score', value: 0.5 }), true);
  assert.equal(matches({ type: 'gt', key: 'code', value: 1 }), false, 'the string "7" is not a number');
  assert.equal(matches({ type: 'lt', key: 'draft', value: 1 }), false);
  assert.equal(matches({ type: 'gte', key: 'missing', value: 0 }), false);
});

test('in and nin: strict membership; a missing key: in false, nin true', () => {
  assert.equal(matches({ type: 'in', key: 'region', value: ['us', 'eu'] }), true);
  assert.equal(matches({ type: 'in', key: 'region', value: ['us'] }), false);
  assert.equal(matches({ type: 'in', key: 'year', value: [2023, 2024] }), true);
  assert.equal(matches({ type: 'in', key: 'code', value: [7] }), false, '"7" is not 7');
  assert.equal(matches({ type: 'in', key: 'draft', value: ['false'] }), false);
  assert.equal(matches({ type: 'in', key: 'missing', value: ['x'] }), false);
  assert.equal(matches({ type: 'nin', key: 'region', value: ['us', 'eu'] }), false);
  assert.equal(matches({ type: 'nin', key: 'region', value: ['us'] }), true);
  assert.equal(matches({ type: 'nin', key: 'missing', value: ['x'] }), true);
  assert.equal(matches({ type: 'in', key: 'region', value: [] }), false);
  assert.equal(matches({ type: 'nin', key: 'region', value: [] }), true);
});

test('and / or, nested', () => {
  const euRecent = {
    type: 'and',
    filters: [
      { type: 'eq', key: 'region', value: 'eu' },
      { type: 'gte', key: 'year', value: 2024 },
    ],
  };
  assert.equal(matches(euRecent), true);
  assert.equal(matches(euRecent, { region: 'eu', year: 2020 }), false);
  const nested = {
    type: 'or',
    filters: [
      { type: 'eq', key: 'region', value: 'us' },
      {
        type: 'and',
        filters: [
          { type: 'eq', key: 'draft', value: false },
          { type: 'nin', key: 'code', value: ['7'] },
        ],
      },
      euRecent,
    ],
  };
  assert.equal(matches(nested), true, 'the third branch');
  assert.equal(matches(nested, { region: 'us' }), true, 'the first branch');
  assert.equal(matches(nested, { draft: false, code: '8' }), true, 'the second branch');
  assert.equal(matches(nested, { draft: false, code: '7' }), false);
  assert.deepEqual(parsed(nested), nested, 'read as given');
});

test('fields other than the ones read are dropped from the typed filter', () => {
  assert.deepEqual(parsed({ type: 'eq', key: 'a', value: 1, extra: true }), { type: 'eq', key: 'a', value: 1 });
});

test('problems name the exact field', () => {
  assert.deepEqual(problemOf('eq'), { field: 'filters', problem: 'must be an object' });
  assert.deepEqual(problemOf({ key: 'a', value: 1 }), {
    field: 'filters.type',
    problem: 'is required',
    allowed: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'and', 'or'],
  });
  assert.equal(problemOf({ type: 'like', key: 'a', value: 1 }).field, 'filters.type');
  assert.deepEqual(problemOf({ type: 'eq', value: 1 }), { field: 'filters.key', problem: 'is required' });
  assert.deepEqual(problemOf({ type: 'eq', key: '', value: 1 }), {
    field: 'filters.key',
    problem: 'must be a non-empty string',
  });
  assert.deepEqual(problemOf({ type: 'eq', key: 'a' }), { field: 'filters.value', problem: 'is required' });
  assert.deepEqual(problemOf({ type: 'eq', key: 'a', value: null }), {
    field: 'filters.value',
    problem: 'must be a string, a finite number or a boolean for eq',
  });
  assert.deepEqual(problemOf({ type: 'eq', key: 'a', value: ['x'] }), {
    field: 'filters.value',
    problem: 'must be a string, a finite number or a boolean for eq',
  });
  assert.deepEqual(problemOf({ type: 'gt', key: 'a', value: '2024-01-01' }), {
    field: 'filters.value',
    problem: 'must be a finite number for gt (range comparisons are numeric)',
  });
  assert.deepEqual(problemOf({ type: 'in', key: 'a', value: 'x' }), {
    field: 'filters.value',
    problem: 'must be an array of strings and numbers for in',
  });
  assert.deepEqual(problemOf({ type: 'nin', key: 'a', value: ['x', true] }), {
    field: 'filters.value[1]',
    problem: 'must be a string or a finite number',
  });
  assert.deepEqual(problemOf({ type: 'and' }), { field: 'filters.filters', problem: 'is required' });
  assert.deepEqual(problemOf({ type: 'or', filters: {} }), { field: 'filters.filters', problem: 'must be an array' });
  assert.deepEqual(problemOf({ type: 'or', filters: [] }), {
    field: 'filters.filters',
    problem: 'must hold at least one filter for or',
  });
  const deep = {
    type: 'and',
    filters: [
      { type: 'eq', key: 'a', value: 1 },
      {
        type: 'or',
        filters: [
          { type: 'eq', key: 'b', value: 2 },
          { type: 'eq', key: 'c', value: { no: 1 } },
        ],
      },
    ],
  };
  assert.deepEqual(problemOf(deep), {
    field: 'filters.filters[1].filters[1].value',
    problem: 'must be a string, a finite number or a boolean for eq',
  });
  assert.equal(problemOf(deep, 'tools[0].filters').field, 'tools[0].filters.filters[1].filters[1].value');
});

test('bounds: depth, nodes, list items, key and string lengths', () => {
  let nested: unknown = { type: 'eq', key: 'a', value: 1 };
  for (let level = 1; level < FILTER_BOUNDS.maxDepth; level++) nested = { type: 'and', filters: [nested] };
  assert.ok(readAttributeFilter(nested).ok, '8 levels are fine');
  const tooDeep = { type: 'and', filters: [nested] };
  const depthProblem = problemOf(tooDeep);
  assert.equal(depthProblem.field, `filters${'.filters[0]'.repeat(8)}`);
  assert.equal(depthProblem.problem, 'nests deeper than 8 levels');

  const leaf = { type: 'eq', key: 'a', value: 1 };
  assert.ok(readAttributeFilter({ type: 'or', filters: Array.from({ length: 99 }, () => leaf) }).ok, '100 nodes');
  assert.deepEqual(problemOf({ type: 'or', filters: Array.from({ length: 100 }, () => leaf) }), {
    field: 'filters.filters',
    problem: 'is past 100 filters in all',
  });
  const spread = {
    type: 'and',
    filters: Array.from({ length: 10 }, () => ({ type: 'or', filters: Array.from({ length: 10 }, () => leaf) })),
  };
  assert.deepEqual(problemOf(spread), { field: 'filters.filters[9]', problem: 'is past 100 filters in all' });
  assert.deepEqual(problemOf({ type: 'or', filters: new Array(1_000_000).fill(leaf) }), {
    field: 'filters.filters',
    problem: 'is past 100 filters in all',
  });

  assert.ok(readAttributeFilter({ type: 'in', key: 'a', value: Array.from({ length: 100 }, (_, i) => i) }).ok);
  assert.deepEqual(problemOf({ type: 'in', key: 'a', value: Array.from({ length: 101 }, (_, i) => i) }), {
    field: 'filters.value',
    problem: 'must hold at most 100 items',
  });
  assert.ok(readAttributeFilter({ type: 'eq', key: 'k'.repeat(64), value: 'v'.repeat(512) }).ok);
  assert.deepEqual(problemOf({ type: 'eq', key: 'k'.repeat(65), value: 1 }), {
    field: 'filters.key',
    problem: 'must be at most 64 characters',
  });
  assert.deepEqual(problemOf({ type: 'ne', key: 'a', value: 'v'.repeat(513) }), {
    field: 'filters.value',
    problem: 'must be at most 512 characters',
  });
  assert.deepEqual(problemOf({ type: 'in', key: 'a', value: ['x', 'v'.repeat(513)] }), {
    field: 'filters.value[1]',
    problem: 'must be at most 512 characters',
  });
});

test("a problem becomes the 400 every field's problem is: validation_failed with details.errors", () => {
  const error = filterProblemError(problemOf({ type: 'eq', key: 'a' }, 'tools[0].filters'));
  assert.equal(error.status, 400);
  assert.equal(error.code, 'validation_failed');
  assert.deepEqual(error.details, { errors: [{ field: 'tools[0].filters.value', problem: 'is required' }] });
});
