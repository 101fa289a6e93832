/** A 400 names at most 50 problems (docs/errors.md) and says how many it left out, whichever check found them. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CHAT_PATH, authHeaders, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';

describe('validation_failed is capped at 50 problems', () => {
  const fixture = useGateway({ env: { BODY_LIMIT_BYTES: String(8 * 1024 * 1024) } });

  const many = 40_000;
  const cases = [
    // Valid for the schema, wrong for the conversation rules (chat-rules.ts): tool results for calls never made.
    // Each is cheap to find: every one is counted.
    {
      name: 'conversation rules',
      message: { role: 'tool', tool_call_id: 'call_never_made', content: 'r' },
      field: 'tool_call_id',
      counted: 'all',
    },
    // Wrong for the schema: all problems are looked for in the body's first 1,024 values only (schema-view.ts), and
    // the answer says there may be more (test/http/validation-bounds.test.ts).
    { name: 'the schema', message: { role: 'wizard', content: 'x' }, field: 'role', counted: 'view' },
  ];
  for (const c of cases) {
    test(`${many} bad messages for ${c.name}: 50 problems, errors_omitted counts the rest ${c.counted === 'all' ? 'exactly' : 'found'}, a small body`, async () => {
      const body = JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'x' }, ...Array.from({ length: many }, () => c.message)],
      });
      const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body });
      assert.equal(answer.status, 400);
      assert.equal(answer.json.code, 'validation_failed');
      const errors = answer.json.details?.errors as Array<{ field: string }>;
      assert.equal(errors.length, 50);
      assert.equal(errors[0]?.field, `messages[1].${c.field}`);
      if (c.counted === 'all') {
        assert.equal(answer.json.details?.errors_omitted, many - 50);
        assert.equal(answer.json.details?.errors_truncated, undefined);
      } else {
        const omitted = answer.json.details?.errors_omitted as number;
        assert.ok(omitted > 100 && omitted < 1024, String(omitted));
        assert.equal(answer.json.details?.errors_truncated, true);
      }
      assert.ok(answer.text.length < 20_000, `${answer.text.length} bytes`);
      assert.equal(fixture.mock.chatRequests().length, 0);
    });
  }

  test('under the cap, nothing is said about omissions', async () => {
    const body = JSON.stringify({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'user', content: 'x' },
        { role: 'tool', tool_call_id: 'nope', content: 'r' },
      ],
    });
    const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body });
    assert.equal(answer.status, 400);
    assert.deepEqual(Object.keys(answer.json.details ?? {}), ['errors']);
  });
});
