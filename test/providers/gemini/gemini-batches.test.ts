/**
 * The Gemini provider's native batch API (src/providers/gemini/gemini-batches.ts) against the mock Gemini upstream
 * speaking the Batch API on a real socket: what the upstream received (the renamed model in the path, the key
 * header, inline requests keyed line-<index>), polling to the end, each answer mapped back to its line as a
 * chat.completion or an error in the gateway's shape, and hostile or malformed answers as errored lines.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GeminiProvider } from '../../../src/providers/gemini/gemini-provider.js';
import { GeminiBatches, displayNameOf } from '../../../src/providers/gemini/gemini-batches.js';
import type { NativeBatchRequest, NativeLineResult, NativeSubmission } from '../../../src/providers/batch-api.js';
import { isGatewayError } from '../../../src/errors/gateway-error.js';
import type { UpstreamConfig } from '../../../src/config/types.js';
import { startGeminiUpstream, type GeminiUpstream } from '../../helpers/upstreams/gemini.js';

const KEY = 'gemini-batch-key-0123456789';

function upstreamConfig(baseUrl: string): UpstreamConfig {
  return {
    name: 'google',
    kind: 'gemini',
    auth: 'api-key',
    deploymentInPath: false,
    apiVersion: undefined,
    streamUsage: 'off',
    baseUrl,
    apiKey: KEY,
    maxConnections: undefined,
    maxConcurrent: undefined,
    queueTimeoutMs: 1000,
    timeouts: { connectMs: 2000, firstByteMs: 5000, idleMs: 5000, totalMs: 10_000 },
    healthCheck: 'none',
    defaultMaxTokens: 1024,
    batch: 'native',
  };
}

const chat = (index: number, text: string, model = 'gemini-2.0-flash'): NativeBatchRequest => ({
  index,
  endpoint: '/v1/chat/completions',
  body: {
    model,
    max_tokens: 20,
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: text },
    ],
  },
});

function submission(lines: NativeBatchRequest[], id = 'batch_abc'): NativeSubmission {
  return {
    gatewayBatchId: id,
    endpoint: '/v1/chat/completions',
    lines: async function* () {
      yield* lines;
    },
    uploadedFileId: undefined,
    onUploaded: async () => undefined,
  };
}

async function collect(iterable: AsyncIterable<NativeLineResult>): Promise<NativeLineResult[]> {
  const out: NativeLineResult[] = [];
  for await (const result of iterable) out.push(result);
  return out.sort((a, b) => a.index - b.index);
}

describe('Gemini Batch API: the provider against the mock upstream', () => {
  let mock: GeminiUpstream;
  let provider: GeminiProvider;
  const signal = () => AbortSignal.timeout(10_000);
  before(async () => {
    mock = await startGeminiUpstream({ requiredKey: KEY });
    provider = new GeminiProvider(upstreamConfig(mock.baseUrl), { userAgent: 'test' });
  });
  after(async () => {
    await provider.close();
    await mock.close();
  });
  beforeEach(() => mock.reset());

  /** Submits, polls until ended (counting the polls), reads the results. */
  async function run(lines: NativeBatchRequest[]) {
    const { batchId } = await provider.batches.submit(submission(lines), signal());
    let status = await provider.batches.status(batchId, signal());
    const seen = [status.upstreamStatus];
    for (let polls = 0; status.state === 'running' && polls < 20; polls += 1) {
      status = await provider.batches.status(batchId, signal());
      seen.push(status.upstreamStatus);
    }
    return {
      batchId,
      status,
      seen,
      results: await collect(provider.batches.results(batchId, signal(), '/v1/chat/completions')),
    };
  }

  test('one batchGenerateContent with every line inline; polled to SUCCEEDED; answers as chat.completions', async () => {
    mock.batches.script = { runningPolls: 2 };
    const { batchId, status, seen, results } = await run([chat(0, 'one'), chat(1, 'two'), chat(2, 'three')]);
    const creates = mock.requests.filter((r) => r.url.endsWith(':batchGenerateContent'));
    assert.equal(creates.length, 1);
    const [create] = creates;
    assert.equal(create?.url, '/v1beta/models/gemini-2.0-flash:batchGenerateContent');
    assert.equal(create?.headers['x-goog-api-key'], KEY);
    assert.equal(mock.generateRequests().length, 0, 'no line went to generateContent');
    const batch = (
      create?.body as { batch: { displayName: string; inputConfig: { requests: { requests: unknown[] } } } }
    ).batch;
    assert.equal(batch.displayName, displayNameOf('batch_abc'));
    assert.deepEqual(batch.inputConfig.requests.requests[1], {
      request: {
        contents: [{ role: 'user', parts: [{ text: 'two' }] }],
        systemInstruction: { parts: [{ text: 'be brief' }] },
        generationConfig: { maxOutputTokens: 20 },
      },
      metadata: { key: 'line-1' },
    });
    assert.match(batchId, /^batches\/mock/);
    assert.deepEqual(seen, ['BATCH_STATE_PENDING', 'BATCH_STATE_RUNNING', 'BATCH_STATE_SUCCEEDED']);
    assert.equal(status.state, 'ended');
    assert.deepEqual(
      results.map((r) => [r.index, r.status, r.requestId]),
      [
        [0, 200, 'resp-one'],
        [1, 200, 'resp-two'],
        [2, 200, 'resp-three'],
      ],
    );
    const body = JSON.parse(results[1]?.body ?? '{}') as Record<string, unknown>;
    assert.equal(body.object, 'chat.completion');
    assert.equal(body.model, 'models/gemini-2.0-flash');
    assert.deepEqual((body.choices as unknown[])[0], {
      index: 0,
      message: { role: 'assistant', content: 'batch answer to two' },
      logprobs: null,
      finish_reason: 'stop',
    });
    assert.deepEqual(body.usage, { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 });
    assert.equal(results[0]?.usage?.prompt_tokens, 10);
    assert.equal(results[0]?.usage?.completion_tokens, 4);
    for (const request of mock.requests) assert.equal(request.headers['x-goog-api-key'], KEY);
  });

  test('answers without metadata are matched by position; reversed ones with metadata by their key', async () => {
    mock.batches.script = { runningPolls: 0, omitMetadata: true };
    const byPosition = await run([chat(0, 'a'), chat(1, 'b')]);
    assert.deepEqual(
      byPosition.results.map((r) => [r.index, r.requestId]),
      [
        [0, 'resp-a'],
        [1, 'resp-b'],
      ],
    );
    mock.batches.script = { runningPolls: 0, reversed: true };
    const byKey = await run([chat(0, 'a'), chat(1, 'b'), chat(2, 'c')]);
    assert.deepEqual(
      byKey.results.map((r) => [r.index, r.requestId]),
      [
        [0, 'resp-a'],
        [1, 'resp-b'],
        [2, 'resp-c'],
      ],
    );
  });

  test("a line's error, a blocked prompt and hostile answers are errored lines in the gateway's shape", async () => {
    mock.batches.script = {
      runningPolls: 0,
      answer: (_request, position) =>
        [
          undefined,
          { error: { code: 3, message: `Invalid value for ${KEY}` } },
          { response: { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 3 } } },
          { response: { candidates: 'not an array' } },
          'not an object',
          { error: { code: 8, message: 'Resource exhausted' } },
          {
            response: {
              candidates: [{ content: { parts: [{ text: 'x' }] } }],
              usageMetadata: { promptTokenCount: -5 },
            },
          },
          { metadata: { key: 'line-999999' }, response: {} },
        ][position],
    };
    const lines = Array.from({ length: 8 }, (_, i) => chat(i, `q${i}`));
    const { results } = await run(lines);
    const at = (index: number) => results.find((r) => r.index === index);
    const bodyAt = (index: number) => JSON.parse(at(index)?.body ?? '{}') as Record<string, unknown>;
    assert.equal(at(0)?.status, 200);
    assert.equal(at(1)?.status, 400);
    assert.equal(bodyAt(1).code, 'upstream_rejected_request');
    assert.doesNotMatch(at(1)?.body ?? '', new RegExp(KEY), 'the key is scrubbed from the error');
    assert.equal(at(2)?.status, 400);
    assert.equal(bodyAt(2).code, 'upstream_content_blocked');
    assert.equal(at(3)?.status, 502);
    assert.equal(bodyAt(3).code, 'upstream_invalid_response');
    assert.equal(bodyAt(4).code, 'upstream_invalid_response', 'a result that is not an object');
    assert.equal(at(5)?.status, 429);
    assert.equal(bodyAt(5).code, 'upstream_rate_limited');
    assert.equal(at(6)?.status, 200, 'a bad usage figure is checked, not trusted');
    assert.deepEqual(Object.keys(bodyAt(1)).sort(), ['code', 'details', 'message']);
    // The key it echoes decides the line: 999999 is no line of this batch (the engine ignores it), line 7 gets none.
    assert.equal(at(7), undefined);
    assert.equal(results.at(-1)?.index, 999999);
  });

  test('results in a responses file are downloaded and read line by line', async () => {
    mock.batches.script = { runningPolls: 0, asFile: true };
    const { results } = await run([chat(0, 'f0'), chat(1, 'f1')]);
    assert.deepEqual(
      results.map((r) => [r.index, r.status, r.requestId]),
      [
        [0, 200, 'resp-f0'],
        [1, 200, 'resp-f1'],
      ],
    );
    const download = mock.requests.find((r) => r.url.startsWith('/download/'));
    assert.match(download?.url ?? '', /^\/download\/v1beta\/files\/out[\w]+:download\?alt=media$/);
    assert.equal(download?.headers['x-goog-api-key'], KEY);
  });

  test('a failed batch says why; a cancelled one ends with the answers it made; find matches the display name', async () => {
    mock.batches.script = { runningPolls: 0, end: 'BATCH_STATE_FAILED' };
    const failed = await run([chat(0, 'x')]);
    assert.equal(failed.status.state, 'failed');
    assert.match(failed.status.reason ?? '', /input was invalid/);

    mock.batches.script = { runningPolls: 100, answeredBeforeCancel: 1 };
    const { batchId } = await provider.batches.submit(
      submission([chat(0, 'c0'), chat(1, 'c1')], 'batch_cancel'),
      signal(),
    );
    assert.equal((await provider.batches.status(batchId, signal())).state, 'running');
    await provider.batches.cancel(batchId, signal());
    assert.ok(mock.requests.some((r) => r.method === 'POST' && r.url === `/v1beta/${batchId}:cancel`));
    const status = await provider.batches.status(batchId, signal());
    assert.deepEqual([status.state, status.upstreamStatus], ['ended', 'BATCH_STATE_CANCELLED']);
    const results = await collect(provider.batches.results(batchId, signal(), '/v1/chat/completions'));
    assert.deepEqual(
      results.map((r) => r.index),
      [0],
    );

    assert.equal(await provider.batches.find('batch_cancel', signal()), batchId);
    assert.equal(await provider.batches.find('batch_never', signal()), undefined);
  });

  test('find reads every page of the list', async () => {
    mock.batches.script = { runningPolls: 100 };
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1)
      ids.push((await provider.batches.submit(submission([chat(0, 'p')], `batch_page${i}`), signal())).batchId);
    mock.batches.pageCap = 1; // newest first, one a page: the oldest is on the third page
    assert.equal(await provider.batches.find('batch_page0', signal()), ids[0]);
    const pages = mock.requests.filter((r) => r.url.startsWith('/v1beta/batches?')).map((r) => r.url);
    assert.deepEqual(pages, [
      '/v1beta/batches?pageSize=100',
      '/v1beta/batches?pageSize=100&pageToken=1',
      '/v1beta/batches?pageSize=100&pageToken=2',
    ]);
  });

  test('refused before any upstream batch exists: several models, an endpoint it does not run, too many bytes', async () => {
    const refusal = async (promise: Promise<unknown>) => {
      const error = await promise.then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(isGatewayError(error), String(error));
      assert.ok(error.status >= 400 && error.status < 500 && error.status !== 429, String(error.status));
      return error;
    };
    await refusal(provider.batches.submit(submission([chat(0, 'a'), chat(1, 'b', 'gemini-2.5-pro')]), signal()));
    await refusal(provider.batches.submit({ ...submission([chat(0, 'a')]), endpoint: '/v1/embeddings' }, signal()));
    await refusal(
      provider.batches.submit(
        submission([
          { index: 0, endpoint: '/v1/chat/completions', body: { model: 'gemini-2.0-flash', messages: 'x' } },
        ]),
        signal(),
      ),
    );
    const tiny = new GeminiBatches({
      name: 'google',
      http: (provider as unknown as { http: ConstructorParameters<typeof GeminiBatches>[0]['http'] }).http,
      headers: () => ({ 'content-type': 'application/json', 'x-goog-api-key': KEY }),
      secrets: [KEY],
      maxInlineBytes: 300,
    });
    const tooBig = await refusal(tiny.submit(submission([chat(0, 'a'), chat(1, 'b'), chat(2, 'c')]), signal()));
    assert.equal(tooBig.code, 'payload_too_large');
    assert.equal(mock.requests.filter((r) => r.url.endsWith(':batchGenerateContent')).length, 0);
    // The upstream's own refusal of the create is a 4xx too (the engine then runs the lines itself).
    mock.batches.script = { createError: { status: 400, grpcStatus: 'INVALID_ARGUMENT', message: 'bad batch' } };
    await refusal(provider.batches.submit(submission([chat(0, 'a')]), signal()));
    // A create answered without a batch name is unreadable (5xx: the engine tries again, then runs the lines).
    mock.batches.script = { createBody: { name: '../../models/evil' } };
    const error = await provider.batches.submit(submission([chat(0, 'a')]), signal()).catch((e: unknown) => e);
    assert.ok(isGatewayError(error) && error.code === 'upstream_invalid_response');
  });

  test('a hostile batch: an unknown state keeps polling, an output that is not a list gives no result', async () => {
    mock.batches.script = { runningPolls: 0, output: { inlinedResponses: { inlinedResponses: 'nope' } } };
    const { results, status } = await run([chat(0, 'h')]);
    assert.equal(status.state, 'ended');
    assert.deepEqual(results, []);
    await assert.rejects(provider.batches.status('batches/../../x', signal()), (e: unknown) => isGatewayError(e));
  });
});
