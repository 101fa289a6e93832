/** The check after JSON.parse: nesting depth and repeated top-level keys, exactly, whatever the strings hold. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_JSON_DEPTH, checkJsonShape } from '../src/http/json-shape.js';

const nested = (levels: number) => `{"model":"m","x":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;

test('depth: the body itself is level 1; MAX_JSON_DEPTH levels pass, one more is refused where it starts', () => {
  assert.equal(checkJsonShape(nested(MAX_JSON_DEPTH)), undefined);
  const deeper = nested(MAX_JSON_DEPTH + 1);
  assert.deepEqual(checkJsonShape(deeper), { kind: 'too_deep', position: deeper.indexOf('[') + MAX_JSON_DEPTH - 1 });
  assert.equal(checkJsonShape(nested(100_000))?.kind, 'too_deep');
});

test('a repeated top-level key is found, however it is spelled, and named', () => {
  const twice = '{"model":"forbidden","model":"allowed"}';
  assert.deepEqual(checkJsonShape(twice), { kind: 'duplicate_key', key: 'model', position: twice.lastIndexOf('"model"') });
  assert.equal(checkJsonShape('{ "model" : "a" ,\n "mod\\u0065l" : "b" }')?.kind, 'duplicate_key');
  assert.equal(checkJsonShape('{"a\\"b":1,"a\\u0022b":2}')?.kind, 'duplicate_key');
  assert.equal(checkJsonShape('{"model":"a","messages":[],"model":"b"}')?.kind, 'duplicate_key');
});

test('what is not a repeated top-level key: nested repeats, keys inside strings, escaped quotes and backslashes', () => {
  for (const text of [
    '{"model":"m","messages":[{"role":"user","content":"x","content":"y"}]}',
    '{"model":"m","messages":[{"role":"user","content":"\\",\\"model\\":\\"other"}]}',
    '{"model":"m","a":"ends with a backslash \\\\","b":"\\\\\\"quoted\\\\\\""}',
    '{"model":"model","x":{"model":1},"y":["model"]}',
    '[{"a":1},{"a":2}]',
    '{}',
  ]) {
    JSON.parse(text); // each is valid JSON
    assert.equal(checkJsonShape(text), undefined, text);
  }
});
