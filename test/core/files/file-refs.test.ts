/** Finding and rewriting the gateway's file ids in a request body (src/core/files/file-refs.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findFileRefs, mayNameFiles, replaceAt } from '../../../src/core/files/file-refs.js';

const OURS = 'file-AbCdEfGhIjKlMnOpQrStUvWx';

test('gateway ids are found with their place; other ids, other keys and strings are not', () => {
  const body = {
    model: 'm',
    messages: [
      { role: 'user', content: 'mentions file-AbCdEfGhIjKlMnOpQrStUvWx in text' },
      {
        role: 'user',
        content: [
          { type: 'file', file: { file_id: 'file-abc123' } },
          { type: 'file', file: { file_id: OURS } },
        ],
      },
    ],
    input: [{ type: 'input_file', file_id: OURS }],
    metadata: { id: OURS },
  };
  const refs = findFileRefs(body, 10);
  assert.deepEqual(
    refs.map((r) => [r.field, r.chatFilePart]),
    [
      ['messages[1].content[1].file.file_id', true],
      ['input[0].file_id', false],
    ],
  );
  assert.ok(mayNameFiles(JSON.stringify(body)));
  assert.ok(!mayNameFiles('{"model":"m","messages":[{"role":"user","content":"a file named profile-x"}]}'));
});

test('the walk stops after limit + 1 and survives a deeply nested body', () => {
  const many = {
    messages: Array.from({ length: 50 }, () => ({ content: [{ type: 'file', file: { file_id: OURS } }] })),
  };
  assert.equal(findFileRefs(many, 3).length, 4);
  let deep: unknown = { file_id: OURS };
  for (let i = 0; i < 100_000; i++) deep = [deep];
  assert.equal(findFileRefs(deep, 3).length, 1);
});

test('replaceAt copies only the path and never changes the original', () => {
  const body = { messages: [{ content: [{ type: 'file', file: { file_id: OURS } }] }], other: { kept: true } };
  const before = JSON.stringify(body);
  const [ref] = findFileRefs(body, 10);
  const out = replaceAt(body, ref!.keys, () => 'file-upstream');
  assert.equal(JSON.stringify(body), before);
  assert.equal(out.messages[0]?.content[0]?.file.file_id, 'file-upstream');
  assert.equal(out.other, body.other, 'what is off the path is shared');
});
