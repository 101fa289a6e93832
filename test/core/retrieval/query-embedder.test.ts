/**
 * Texts to vectors through the embeddings pipeline (core/retrieval/query-embedder.ts): against the real gateway's
 * `/v1/embeddings` through the app's own `callAs` (a node:http upstream speaking OpenAI's wire), and with scripted
 * call results for the answers a real upstream rarely sends (base64, shuffled indexes, broken vectors).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { embedTexts, MAX_EMBED_TEXTS, MAX_VECTOR_LENGTH } from '../../../src/core/retrieval/query-embedder.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { ADMIN, principalSnapshot } from '../../../src/auth/principal.js';
import { useGateway } from '../../helpers/gateway.js';
import { mockVector } from '../../helpers/upstreams/openai/native.js';
import { fixedEmbeddings } from '../../helpers/fixed-embeddings.js';

const AS = { owner: 'admin', principal: principalSnapshot(ADMIN) };

async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof GatewayError, String(error));
    return error;
  }
  assert.fail('expected a GatewayError');
}

describe('through the real gateway', () => {
  const fixture = useGateway({
    env: { EMBED_TEST_KEY: 'sk-embed-test' },
    configFile: {
      name: 'embed.yaml',
      text: (baseUrl) =>
        [
          'circuit_breaker: { failure_threshold: 1000 }',
          'upstreams:',
          `  - { name: oai, kind: openai, base_url: "${baseUrl}", api_key_env: EMBED_TEST_KEY }`,
          'models:',
          '  - { id: emb, upstream: oai, upstream_model: text-embedding-3-small, type: embedding, pricing: { input_per_million: 1000, output_per_million: 0 } }',
        ].join('\n'),
    },
  });

  test('vectors in order with the dimension asked for, and the usage the pipeline settled with its cost', async () => {
    const { callAs } = fixture.gw.gateway;
    const result = await embedTexts({ callAs, as: AS, model: 'emb', texts: ['a', 'b', 'c'], dimensions: 5 });
    assert.deepEqual(
      result.vectors.map((v) => [...v]),
      [0, 1, 2].map((i) => [...Float32Array.from(mockVector(i, 5))]),
    );
    assert.equal(result.usage?.prompt_tokens, 15);
    assert.equal(result.usage?.cost_usd, 0.015);
    const sent = fixture.mock.requests.find((r) => r.path === '/v1/embeddings');
    assert.deepEqual(sent?.json, {
      model: 'text-embedding-3-small',
      input: ['a', 'b', 'c'],
      encoding_format: 'float',
      dimensions: 5,
    });
  });

  test("an upstream's refusal is the pipeline's error, status and details", async () => {
    fixture.mock.enqueue({
      kind: 'error',
      status: 400,
      body: { error: { message: 'bad input', type: 'invalid_request_error' } },
    });
    const error = await refusal(embedTexts({ callAs: fixture.gw.gateway.callAs, as: AS, model: 'emb', texts: ['a'] }));
    assert.equal(error.code, 'upstream_rejected_request');
    assert.equal(error.status, 400);
    assert.deepEqual(error.details, {
      upstream: 'oai',
      upstream_status: 400,
      upstream_type: 'invalid_request_error',
      upstream_message: 'bad input',
    });
  });

  test("an owner whose key is gone: the authenticator's refusal, 401 invalid_token", async () => {
    const gone = { owner: 'key:gone', principal: AS.principal };
    const error = await refusal(
      embedTexts({ callAs: fixture.gw.gateway.callAs, as: gone, model: 'emb', texts: ['a'] }),
    );
    assert.deepEqual([error.code, error.status], ['invalid_token', 401]);
  });

  test('an answer with fewer vectors than texts is 502 upstream_invalid_response naming it', async () => {
    fixture.mock.enqueue({
      kind: 'raw',
      handler: (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'list',
            data: [{ object: 'embedding', index: 0, embedding: [1, 2] }],
            model: 'm',
            usage: { prompt_tokens: 1, total_tokens: 1 },
          }),
        );
      },
    });
    const error = await refusal(
      embedTexts({ callAs: fixture.gw.gateway.callAs, as: AS, model: 'emb', texts: ['a', 'b'] }),
    );
    assert.equal(error.code, 'upstream_invalid_response');
    assert.equal(error.status, 502);
    assert.deepEqual(error.details, { model: 'emb', reason: 'not one embedding per text', expected: 2, got: 1 });
  });
});

describe("through the real gateway: the caller's rate limit", () => {
  const fixture = useGateway({
    env: { EMBED_TEST_KEY: 'sk-embed-test' },
    configFile: {
      name: 'limited.yaml',
      text: (baseUrl) =>
        [
          'upstreams:',
          `  - { name: oai, kind: openai, base_url: "${baseUrl}", api_key_env: EMBED_TEST_KEY }`,
          'models:',
          '  - { id: emb, upstream: oai, upstream_model: text-embedding-3-small, type: embedding }',
          'limits:',
          '  caller:',
          '    requests: { limit: 1, window_seconds: 60 }',
        ].join('\n'),
    },
  });

  test('a spent limit is 429 rate_limited with its Retry-After, and no vector', async () => {
    const embed = () => embedTexts({ callAs: fixture.gw.gateway.callAs, as: AS, model: 'emb', texts: ['a'] });
    assert.equal((await embed()).vectors.length, 1);
    const error = await refusal(embed());
    assert.deepEqual([error.code, error.status], ['rate_limited', 429]);
    assert.ok((error.retryAfterMs ?? 0) > 0 && (error.retryAfterMs ?? 0) <= 60_000, String(error.retryAfterMs));
    assert.equal(fixture.mock.requests.filter((r) => r.path === '/v1/embeddings').length, 1, 'the upstream saw one');
  });
});

describe('answers checked (scripted call results)', () => {
  const answer = (data: unknown[]) => JSON.stringify({ object: 'list', data });
  const embed = (body: string, texts = ['x', 'y']) => {
    const fixed = fixedEmbeddings({});
    fixed.next({ body });
    return embedTexts({ callAs: fixed.callAs, as: AS, model: 'm', texts });
  };

  test('base64 (little-endian float32) is decoded; items are placed by their index', async () => {
    const bytes = Buffer.alloc(8);
    bytes.writeFloatLE(0.5, 0);
    bytes.writeFloatLE(-2, 4);
    const result = await embed(
      answer([
        { index: 1, embedding: [3, 4] },
        { index: 0, embedding: bytes.toString('base64') },
      ]),
    );
    assert.deepEqual(
      result.vectors.map((v) => [...v]),
      [
        [0.5, -2],
        [3, 4],
      ],
    );
  });

  test('no texts: no call', async () => {
    const fixed = fixedEmbeddings({});
    assert.deepEqual(await embedTexts({ callAs: fixed.callAs, as: AS, model: 'm', texts: [] }), {
      vectors: [],
      usage: undefined,
    });
    assert.equal(fixed.calls.length, 0);
    await assert.rejects(
      embedTexts({ callAs: fixed.callAs, as: AS, model: 'm', texts: new Array<string>(MAX_EMBED_TEXTS + 1).fill('a') }),
      RangeError,
    );
  });

  test('a cache hit settled nothing: no usage', async () => {
    const fixed = fixedEmbeddings({ x: [1] });
    fixed.next({ cacheHit: true, body: answer([{ index: 0, embedding: [1] }]) });
    const result = await embedTexts({ callAs: fixed.callAs, as: AS, model: 'm', texts: ['x'] });
    assert.equal(result.usage, undefined);
  });

  const broken: [string, string, string][] = [
    ['not JSON', 'nope', 'no data list'],
    ['no data', JSON.stringify({ object: 'list' }), 'no data list'],
    ['an item not an object', answer([1, 2]), 'data[0] is not an object'],
    [
      'an index twice',
      answer([
        { index: 0, embedding: [1] },
        { index: 0, embedding: [1] },
      ]),
      'data[1].index is not a free position below 2',
    ],
    [
      'an index out of range',
      answer([
        { index: 0, embedding: [1] },
        { index: 2, embedding: [1] },
      ]),
      'data[1].index is not a free position below 2',
    ],
    [
      'a string in a vector',
      answer([{ embedding: [1, '2'] }, { embedding: [1, 2] }]),
      'data[0].embedding holds a value that is not a finite number',
    ],
    [
      'a null in a vector',
      answer([{ embedding: [1, 2] }, { embedding: [null, 2] }]),
      'data[1].embedding holds a value that is not a finite number',
    ],
    [
      'a value past float32',
      answer([{ embedding: [1e39] }, { embedding: [1] }]),
      'data[0].embedding holds a value past float32',
    ],
    ['an empty vector', answer([{ embedding: [] }, { embedding: [] }]), 'data[0].embedding is empty'],
    ['no embedding', answer([{ index: 0 }, { index: 1 }]), 'data[0].embedding is not a list of numbers'],
    [
      'too long',
      answer([{ embedding: new Array(MAX_VECTOR_LENGTH + 1).fill(0) }, { embedding: [1] }]),
      `data[0].embedding is longer than ${MAX_VECTOR_LENGTH}`,
    ],
    [
      'bad base64',
      answer([{ embedding: 'AAA' }, { embedding: [1] }]),
      'data[0].embedding is not base64 of float32 values',
    ],
    [
      'lengths that differ',
      answer([{ embedding: [1, 2] }, { embedding: [1, 2, 3] }]),
      'embeddings of different lengths',
    ],
  ];
  for (const [name, body, reason] of broken) {
    test(`502 upstream_invalid_response: ${name}`, async () => {
      const error = await refusal(embed(body));
      assert.equal(error.code, 'upstream_invalid_response');
      assert.equal(error.status, 502);
      assert.equal(error.details.reason, reason);
      assert.equal(error.details.model, 'm');
      assert.equal(error.message, `The embeddings answer cannot be used for the vector store: ${reason}.`);
    });
  }

  test("a refusal with only OpenAI's error object, and one with no code at all", async () => {
    const fixed = fixedEmbeddings({});
    fixed.next({
      status: 403,
      body: JSON.stringify({ error: { code: 'model_not_allowed', message: 'Not this model.' } }),
    });
    const openAiOnly = await refusal(embedTexts({ callAs: fixed.callAs, as: AS, model: 'm', texts: ['x'] }));
    assert.deepEqual(
      [openAiOnly.code, openAiOnly.status, openAiOnly.message],
      ['model_not_allowed', 403, 'Not this model.'],
    );
    fixed.next({ status: 500, body: '<html>' });
    const unknown = await refusal(embedTexts({ callAs: fixed.callAs, as: AS, model: 'm', texts: ['x'] }));
    assert.deepEqual([unknown.code, unknown.status, unknown.details], ['internal_error', 500, { status: 500 }]);
  });
});
