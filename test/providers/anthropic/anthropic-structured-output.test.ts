/**
 * Structured output to Anthropic: a chat `response_format` with a JSON Schema (what the Gemini surface makes of
 * Gemini CLI's router call, what chat and Responses callers send) reaches Anthropic as `output_config.format`,
 * instead of being dropped, so the answer follows the schema (docs/messages.md, "Structured output to Anthropic").
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { toAnthropicRequest } from '../../../src/providers/anthropic/translate-request.js';
import { takesStructuredOutput } from '../../../src/providers/anthropic/structured-output.js';
import type { ChatRequestBody } from '../../../src/providers/provider-contract.js';

const SCHEMA = {
  type: 'object',
  properties: { complexity_score: { type: 'integer' } },
  required: ['complexity_score'],
  additionalProperties: false,
};

const body = (extra: Partial<ChatRequestBody>): ChatRequestBody => ({
  model: 'm',
  messages: [{ role: 'user', content: 'Route this task.' }],
  ...extra,
});

describe('structured output to Anthropic', () => {
  test('a JSON Schema response_format is sent as output_config.format, with the schema as the caller wrote it', () => {
    const out = toAnthropicRequest(
      body({ response_format: { type: 'json_schema', json_schema: { name: 'route', schema: SCHEMA, strict: true } } }),
      'claude-sonnet-4-5',
    );
    assert.deepEqual(out.output_config, { format: { type: 'json_schema', schema: SCHEMA } });
  });

  test('beside the effort of adaptive thinking, both are sent in the one output_config', () => {
    const out = toAnthropicRequest(
      body({
        reasoning_effort: 'high',
        response_format: { type: 'json_schema', json_schema: { name: 'r', schema: SCHEMA } },
      }),
      'claude-opus-4-6',
    );
    assert.deepEqual(out.thinking, { type: 'adaptive' });
    assert.deepEqual(out.output_config, { effort: 'high', format: { type: 'json_schema', schema: SCHEMA } });
  });

  test('an older Claude, json_object and text go without it, as before', () => {
    const schema = { type: 'json_schema', json_schema: { name: 'r', schema: SCHEMA } };
    assert.equal(
      toAnthropicRequest(body({ response_format: schema }), 'claude-3-5-sonnet-20241022').output_config,
      undefined,
    );
    assert.equal(
      toAnthropicRequest(body({ response_format: schema }), 'claude-sonnet-4-20250514').output_config,
      undefined,
    );
    assert.equal(
      toAnthropicRequest(body({ response_format: { type: 'json_object' } }), 'claude-sonnet-4-5').output_config,
      undefined,
    );
    assert.equal(
      toAnthropicRequest(body({ response_format: { type: 'text' } }), 'claude-sonnet-4-5').output_config,
      undefined,
    );
    // A schema that is not an object is not a schema: nothing sent.
    const bad = { type: 'json_schema', json_schema: { name: 'r', schema: 'object' } };
    assert.equal(toAnthropicRequest(body({ response_format: bad }), 'claude-sonnet-4-5').output_config, undefined);
  });

  test('which models take it: Claude 4.5 and later, Opus 4.1, and names that say no Claude generation', () => {
    const takes = [
      'claude-sonnet-4-5',
      'claude-haiku-4-5-20251001',
      'claude-opus-4-1',
      'claude-opus-4-6',
      'claude-sonnet-5',
      'my-proxy-model',
    ];
    const refuses = [
      'claude-3-5-sonnet-20241022',
      'claude-3-haiku-20240307',
      'claude-sonnet-4-20250514',
      'claude-opus-4',
      'claude-sonnet-4-1',
    ];
    for (const model of takes) assert.equal(takesStructuredOutput(model), true, model);
    for (const model of refuses) assert.equal(takesStructuredOutput(model), false, model);
  });
});
