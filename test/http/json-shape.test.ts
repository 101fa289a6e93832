/** The check after JSON.parse: nesting depth and repeated top-level keys, exactly, whatever the strings hold. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_JSON_DEPTH, checkJsonShape } from '../../src/http/json-shape.js';

const nested = (levels: number) => `{"model":"m","x":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;

test('depth: the body itself is level 1; MAX_JSON_DEPTH levels pass, one more is refused where it starts', () => {
  assert.equal(checkJsonShape(nested(MAX_JSON_DEPTH)), undefined);
  const deeper = nested(MAX_JSON_DEPTH + 1);
  assert.deepEqual(checkJsonShape(deeper), { kind: 'too_deep', position: deeper.indexOf('[') + MAX_JSON_DEPTH - 1 });
  assert.equal(checkJsonShape(nested(100_000))?.kind, 'too_deep');
});

test('a repeated top-level key is found, however it is spelled, and named', () => {
  const twice = '{"model":"forbidden","model":"allowed"}';
  assert.deepEqual(checkJsonShape(twice), {
    kind: 'duplicate_key',
    key: 'model',
    position: twice.lastIndexOf('"model"'),
    path: '',
  });
  assert.equal(checkJsonShape('{ "model" : "a" ,\n "mod\\u0065l" : "b" }')?.kind, 'duplicate_key');
  assert.equal(checkJsonShape('{"a\\"b":1,"a\\u0022b":2}')?.kind, 'duplicate_key');
  assert.equal(checkJsonShape('{"model":"a","messages":[],"model":"b"}')?.kind, 'duplicate_key');
});

test('a key repeated in a nested object is found too, with the path of that object', () => {
  const cases: Array<[string, string, string]> = [
    ['{"model":"m","messages":[{"role":"user","content":"x","content":"y"}]}', 'content', 'messages[0]'],
    ['{"model":"m","messages":[{"role":"user"},{"a":{"b":[1,2,{"k":1,"k":2}]}}]}', 'k', 'messages[1].a.b[2]'],
    ['[{"a":1},{"a":2,"a":3}]', 'a', '[1]'],
    ['{"x":{"m\\u0065":1,"me":2}}', 'me', 'x'],
  ];
  for (const [text, key, path] of cases) {
    const found = checkJsonShape(text);
    assert.equal(found?.kind, 'duplicate_key', text);
    assert.equal(found.kind === 'duplicate_key' && found.key, key, text);
    assert.equal(found.kind === 'duplicate_key' && found.path, path, text);
  }
});

test('one object with 200,000 distinct keys is checked in linear time (no quadratic scan), and a repeat among them found', () => {
  const keys = Array.from({ length: 200_000 }, (_, n) => `"k${n}":0`);
  const started = performance.now();
  assert.equal(checkJsonShape(`{"o":{${keys.join(',')}}}`), undefined);
  const repeated = checkJsonShape(`{"o":{${keys.join(',')},"k7":1}}`);
  assert.equal(repeated?.kind === 'duplicate_key' && repeated.path, 'o');
  // Linear: ~40 ms here; a scan of every earlier key would take minutes.
  assert.ok(performance.now() - started < 2000, `${performance.now() - started} ms`);
});

test('what is not a repeated key: the same key in sibling objects, keys inside strings, escaped quotes and backslashes', () => {
  for (const text of [
    '{"model":"m","messages":[{"role":"user","content":"x"},{"role":"user","content":"y"}]}',
    '{"model":"m","messages":[{"role":"user","content":"\\",\\"model\\":\\"other"}]}',
    '{"model":"m","a":"ends with a backslash \\\\","b":"\\\\\\"quoted\\\\\\""}',
    '{"model":"model","x":{"model":1},"y":["model"]}',
    '{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}',
    '[{"a":1},{"a":2}]',
    '{}',
  ]) {
    JSON.parse(text); // each is valid JSON
    assert.equal(checkJsonShape(text), undefined, text);
  }
});
