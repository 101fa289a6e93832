/**
 * The `file_search` tool's `filters` and `ranking_options` are read as a search body's are: the search compiles a
 * filter unchecked, so `{type: 'or', filters: [null]}` let through was a TypeError (a 500) after the model's first
 * turn had been paid for. Now a 400 naming the field, before any model turn.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ProblemList } from '../../../src/http/validation-details.js';
import { readFileSearchTool } from '../../../src/surfaces/file-search/tool-spec.js';
import { authHeaders } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { MODELS, OUR_STORE, useFileSearchGateway } from '../../helpers/file-search-fixture.js';

const read = (tool: Record<string, unknown>) => {
  const problems = new ProblemList();
  const spec = readFileSearchTool({ type: 'file_search', vector_store_ids: ['vs_a'], ...tool }, 'tools[0]', problems);
  return { spec, errors: problems.details().errors };
};

describe('readFileSearchTool', () => {
  test('a malformed filter is a problem naming its field, not a filter the search would crash on', () => {
    for (const [filters, field] of [
      [{ type: 'or', filters: [null] }, 'tools[0].filters.filters[0]'],
      [{ type: 'and', filters: 5 }, 'tools[0].filters.filters'],
      [{ type: 'gt', key: 'year', value: '2020' }, 'tools[0].filters.value'],
      [{ type: 'in', key: 'k', value: Array.from({ length: 1000 }, (_, i) => i) }, 'tools[0].filters.value'],
    ] as const) {
      const { spec, errors } = read({ filters });
      assert.equal(spec, undefined, JSON.stringify(filters).slice(0, 80));
      assert.equal(errors[0]?.field, field);
    }
  });

  test('ranking options are checked: weights, threshold, ranker', () => {
    for (const [ranking_options, field] of [
      [{ hybrid_search: { embedding_weight: 'x', text_weight: 1 } }, 'tools[0].ranking_options.hybrid_search'],
      [{ score_threshold: 'high' }, 'tools[0].ranking_options.score_threshold'],
      [{ ranker: 'best' }, 'tools[0].ranking_options.ranker'],
    ] as const) {
      const { spec, errors } = read({ ranking_options });
      assert.equal(spec, undefined);
      assert.equal(errors[0]?.field, field);
    }
  });

  test('a valid tool is read into typed fields', () => {
    const { spec, errors } = read({
      filters: { type: 'and', filters: [{ type: 'eq', key: 'lang', value: 'en' }] },
      max_num_results: 3,
      ranking_options: { score_threshold: 0.5, hybrid_search: { embedding_weight: 1, text_weight: 2 } },
    });
    assert.deepEqual(errors, []);
    assert.deepEqual(spec?.filters, { type: 'and', filters: [{ type: 'eq', key: 'lang', value: 'en' }] });
    assert.equal(spec?.maxNumResults, 3);
    assert.deepEqual(spec?.rankingOptions, {
      score_threshold: 0.5,
      hybrid_search: { embedding_weight: 1, text_weight: 2 },
    });
  });
});

describe('a chat request whose file_search tool has a malformed filter', () => {
  const fx = useFileSearchGateway();

  test('is a 400 naming the field, and no model turn is made', async () => {
    const seen = fx.upstream.modelCalls().length;
    const answer = await call(`${fx.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({
        model: MODELS.chat,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'file_search', vector_store_ids: [OUR_STORE], filters: { type: 'or', filters: [null] } }],
      }),
    });
    assert.equal(answer.status, 400, answer.text);
    assert.equal(answer.json.code, 'validation_failed');
    const errors = (answer.json.details as { errors: { field: string }[] }).errors;
    assert.equal(errors[0]?.field, 'tools[0].filters.filters[0]');
    assert.equal(fx.upstream.modelCalls().length, seen);
  });
});
