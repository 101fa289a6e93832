import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MIN_NODE_MAJOR, unsupportedNode } from '../../src/process/node-version.js';

test('Node 24 and later run the gateway; older lines get one clear sentence', () => {
  assert.equal(MIN_NODE_MAJOR, 24);
  for (const version of ['v24.0.0', 'v24.21.0', 'v26.10.0', 'v27.0.0'])
    assert.equal(unsupportedNode(version), undefined, version);
  for (const version of ['v20.20.2', 'v22.23.3', 'v23.11.0'])
    assert.match(
      unsupportedNode(version) ?? '',
      /^Node v\d+\.\d+\.\d+ is not supported: the gateway needs Node 24 or later/,
      version,
    );
  assert.equal(unsupportedNode(), undefined, `the tests themselves run on a supported Node (${process.version})`);
});
