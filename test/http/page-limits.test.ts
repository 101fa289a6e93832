/**
 * Every paged route reads `limit` by one rule: decimal digits from 1 to the route's maximum. `Number()` alone
 * took `1e2` and `0x10` (and ` 5`, `5.0`) as page sizes on the keys API and on a stored response's input items.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { authHeaders, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';

const NOT_DIGITS = ['1e2', '0x10', '1e0', '5.0', '+5', ' 5', '0', '-1', '', '1'.repeat(40)];

describe('page sizes: decimal digits only, on every paged route', () => {
  const fixture = useGateway();

  async function expectRefused(path: string, max: number): Promise<void> {
    for (const limit of NOT_DIGITS) {
      const answer = await call(fixture.url(`${path}&limit=${encodeURIComponent(limit)}`), { headers: authHeaders() });
      assert.equal(answer.status, 400, `${path} limit=${JSON.stringify(limit)}: ${answer.text}`);
      assert.equal(answer.json.code, 'invalid_query_parameter');
      assert.deepEqual(answer.json.details, {
        parameter: 'limit',
        problem: `must be a whole number from 1 to ${max}, in decimal digits`,
      });
    }
    const fine = await call(fixture.url(`${path}&limit=1`), { headers: authHeaders() });
    assert.equal(fine.status, 200, fine.text);
    assert.ok(Array.isArray(fine.json.data) && fine.json.data.length <= 1);
  }

  test('the models route', () => expectRefused('/v1/?route=models', 200));

  test("the keys API's list", () => expectRefused('/v1/?route=keys', 200));

  test("a stored response's input items", async () => {
    const created = await call(fixture.url('/v1/responses'), {
      method: 'POST',
      headers: { ...authHeaders(), 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        input: [
          { role: 'user', content: 'one' },
          { role: 'user', content: 'two' },
        ],
      }),
    });
    assert.equal(created.status, 200, created.text);
    await expectRefused(`/v1/?route=responses&id=${String(created.json.id)}&view=input_items`, 100);
  });
});
