/**
 * The Anthropic provider's Message Batches adapter (providers/anthropic/message-batches.ts) against a byte-level mock
 * of Anthropic's API: what the upstream receives (one create with every line, custom ids from the line index, the
 * renamed model, the upstream key and `anthropic-version`, chat lines translated, no `stream`), the bounds that make
 * the gateway run a batch itself, status, cancel, and each result mapped to its line's endpoint's shape: succeeded,
 * errored, canceled and expired (absent), and hostile lines (errored, never a crash).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { UpstreamConfig } from '../../../src/config/types.js';
import { AnthropicProvider } from '../../../src/providers/anthropic/anthropic-provider.js';
import type { NativeBatchApi, NativeBatchRequest, NativeLineResult } from '../../../src/providers/batch-api.js';
import { isGatewayError } from '../../../src/errors/gateway-error.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../../helpers/upstreams/anthropic.js';

const KEY = 'sk-ant-upstream-0123456789abcdef';

function upstreamConfig(baseUrl: string): UpstreamConfig {
  return {
    name: 'claude',
    kind: 'anthropic',
    auth: 'api-key',
    deploymentInPath: false,
    apiVersion: undefined,
    streamUsage: 'auto',
    baseUrl,
    apiKey: KEY,
    maxConnections: undefined,
    maxConcurrent: undefined,
    queueTimeoutMs: 1_000,
    timeouts: { connectMs: 2_000, firstByteMs: 5_000, idleMs: 5_000, totalMs: 10_000 },
    healthCheck: 'none',
    defaultMaxTokens: 1024,
    batch: 'native',
  };
}

const signal = () => AbortSignal.timeout(10_000);

function messagesLine(index: number, text: string): NativeBatchRequest {
  return {
    index,
    endpoint: '/v1/messages',
    body: {
      model: 'claude-haiku-4-5-20251001',
      max_tokens: 64,
      stream: false,
      messages: [{ role: 'user', content: text }],
    },
  };
}

function chatLine(index: number, text: string): NativeBatchRequest {
  return {
    index,
    endpoint: '/v1/chat/completions',
    body: {
      model: 'claude-haiku-4-5-20251001',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: text },
      ],
    },
  };
}

function submission(lines: NativeBatchRequest[], endpoint = '/v1/messages') {
  return {
    gatewayBatchId: 'batch_gw_1',
    endpoint,
    lines: async function* () {
      yield* lines;
    },
    uploadedFileId: undefined,
    onUploaded: () => Promise.reject(new Error('no file is uploaded to Anthropic')),
  };
}

async function collect(api: NativeBatchApi, id: string, endpoint: string): Promise<NativeLineResult[]> {
  const out: NativeLineResult[] = [];
  for await (const result of api.results(id, signal(), endpoint)) out.push(result);
  return out;
}

async function runToEnd(api: NativeBatchApi, id: string): Promise<void> {
  for (let i = 0; i < 20; i++) if ((await api.status(id, signal())).state === 'ended') return;
  throw new Error('the batch never ended');
}

describe('Anthropic Message Batches adapter', () => {
  let mock: AnthropicUpstream;
  let provider: AnthropicProvider;
  let api: NativeBatchApi;
  before(async () => {
    mock = await startAnthropicUpstream({ requiredKey: KEY, batches: { pollsBeforeDone: 2 } });
    provider = new AnthropicProvider(upstreamConfig(mock.baseUrl), { userAgent: 'llm-gateway-test' });
    api = provider.batches;
  });
  after(async () => {
    await provider.close();
    await mock.close();
  });

  test('Messages lines: one create, the upstream key and version, params as given without stream', async () => {
    assert.deepEqual([...api.endpoints].sort(), ['/v1/chat/completions', '/v1/messages']);
    const { batchId } = await api.submit(
      submission([
        messagesLine(0, 'one'),
        messagesLine(1, 'ERR'),
        messagesLine(2, 'EXPIRE'),
        messagesLine(5, 'six — ü✓ 🎉'),
      ]),
      signal(),
    );
    assert.match(batchId, /^msgbatch_/);
    const creates = mock.of('POST', '/v1/messages/batches');
    assert.equal(creates.length, 1);
    const create = creates[0];
    assert.equal(create?.headers['x-api-key'], KEY);
    assert.equal(create?.headers['anthropic-version'], '2023-06-01');
    assert.equal(create?.headers['content-type'], 'application/json');
    assert.equal(create?.headers.authorization, undefined);
    assert.equal(create?.headers['content-length'], String(Buffer.byteLength(create?.text ?? '')));
    assert.equal(create?.headers['transfer-encoding'], undefined);
    const sent = JSON.parse(create?.text ?? '') as { requests: Array<{ custom_id: string; params: object }> };
    assert.deepEqual(Object.keys(sent), ['requests']);
    assert.deepEqual(sent.requests[0], {
      custom_id: 'line-0',
      params: { model: 'claude-haiku-4-5-20251001', max_tokens: 64, messages: [{ role: 'user', content: 'one' }] },
    });
    assert.deepEqual(
      sent.requests.map((r) => r.custom_id),
      ['line-0', 'line-1', 'line-2', 'line-5'],
    );
    assert.equal(await api.find('batch_gw_1', signal()), undefined);

    assert.deepEqual(await api.status(batchId, signal()), { state: 'running', upstreamStatus: 'in_progress' });
    await runToEnd(api, batchId);
    const results = await collect(api, batchId, '/v1/messages');
    // line-2 expired: absent (the gateway closes it).
    assert.deepEqual(
      results.map((r) => [r.index, r.status]),
      [
        [0, 200],
        [1, 400],
        [5, 200],
      ],
    );
    const message = JSON.parse(results[0]?.body ?? '') as { type: string; model: string; content: unknown };
    assert.equal(message.type, 'message');
    assert.equal(message.model, 'claude-haiku-4-5-20251001');
    assert.deepEqual(message.content, [{ type: 'text', text: 'answer to one' }]);
    assert.equal(results[0]?.usage?.prompt_tokens, 10);
    assert.equal(results[0]?.usage?.completion_tokens, 20);
    assert.deepEqual(JSON.parse(results[1]?.body ?? ''), {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'messages: the last message is not acceptable' },
    });
    assert.equal(results[1]?.requestId, 'req_line-1');
    assert.equal(results[1]?.usage, undefined);
    // Every request carried the upstream key; the results came from the documented path.
    for (const request of mock.requests) assert.equal(request.headers['x-api-key'], KEY);
    assert.equal(mock.of('GET', `/v1/messages/batches/${batchId}/results`).length, 1);
  });

  test('chat lines: translated to Messages params, results translated back to chat completions', async () => {
    const { batchId } = await api.submit(
      submission([chatLine(0, 'hello'), chatLine(1, 'ERR')], '/v1/chat/completions'),
      signal(),
    );
    const create = mock.of('POST', '/v1/messages/batches').at(-1);
    const sent = JSON.parse(create?.text ?? '') as {
      requests: Array<{ custom_id: string; params: Record<string, unknown> }>;
    };
    const params = sent.requests[0]?.params;
    assert.equal(params?.model, 'claude-haiku-4-5-20251001');
    assert.equal(params?.max_tokens, 1024, "the upstream's default_max_tokens");
    assert.ok(!('stream' in (params ?? {})));
    assert.ok(JSON.stringify(params?.system).includes('be brief'), 'the system message moved to system');
    await runToEnd(api, batchId);
    const results = await collect(api, batchId, '/v1/chat/completions');
    const completion = JSON.parse(results[0]?.body ?? '') as {
      object: string;
      choices: Array<{ message: { content: string }; finish_reason: string }>;
      usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
    };
    assert.equal(results[0]?.status, 200);
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.choices[0]?.message.content, 'answer to hello');
    assert.equal(completion.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(completion.usage, { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 });
    // The chat line's error: what an interactive chat call would have answered (the gateway's error shape).
    assert.equal(results[1]?.status, 400);
    const failure = JSON.parse(results[1]?.body ?? '') as { code: string; details: Record<string, unknown> };
    assert.equal(failure.code, 'upstream_rejected_request');
    assert.equal(failure.details.upstream_type, 'invalid_request_error');
  });

  test('cancel: canceling, then ended; what it answered is kept, canceled requests are absent', async () => {
    mock.batches.options.pollsBeforeDone = Infinity;
    mock.batches.options.answeredBeforeCancel = 1;
    try {
      const { batchId } = await api.submit(submission([messagesLine(0, 'a'), messagesLine(1, 'b')]), signal());
      await api.cancel(batchId, signal());
      const cancel = mock.of('POST', `/v1/messages/batches/${batchId}/cancel`);
      assert.equal(cancel.length, 1);
      assert.equal(cancel[0]?.text, '');
      assert.equal(mock.batches.get(batchId)?.status, 'canceling');
      assert.deepEqual(await api.status(batchId, signal()), { state: 'ended', upstreamStatus: 'ended' });
      const results = await collect(api, batchId, '/v1/messages');
      assert.deepEqual(
        results.map((r) => [r.index, r.status]),
        [[0, 200]],
      );
    } finally {
      mock.batches.options.pollsBeforeDone = 2;
      delete mock.batches.options.answeredBeforeCancel;
    }
  });

  test('hostile results: garbage skipped, malformed results of our lines errored, absurd usage bounded', async () => {
    const { batchId } = await api.submit(submission([messagesLine(0, 'x')]), signal());
    await runToEnd(api, batchId);
    mock.batches.options.rawResults = [
      'not json',
      '[1,2]',
      JSON.stringify({ custom_id: 'someone-else', result: { type: 'succeeded', message: {} } }),
      JSON.stringify({
        custom_id: 'line-0',
        result: { type: 'succeeded', message: { type: 'message', content: 'x' } },
      }),
      JSON.stringify({ custom_id: 'line-1', result: { type: 'exploded' } }),
      JSON.stringify({ custom_id: 'line-2', result: { type: 'errored', error: { type: 'error', error: 7 } } }),
      JSON.stringify({
        custom_id: 'line-3',
        result: {
          type: 'errored',
          error: { type: 'error', error: { type: 'mystery_error', message: `key ${KEY} refused` } },
        },
      }),
      JSON.stringify({
        custom_id: 'line-4',
        result: {
          type: 'succeeded',
          message: {
            type: 'message',
            content: [{ type: 'text', text: `echo ${KEY}` }],
            usage: { input_tokens: -5, output_tokens: 1e300 },
          },
        },
      }),
      JSON.stringify({ custom_id: 'line-5', result: null }),
      '',
    ].join('\n');
    try {
      const results = await collect(api, batchId, '/v1/messages');
      assert.deepEqual(
        results.map((r) => [r.index, r.status]),
        [
          [0, 502],
          [1, 502],
          [2, 502],
          [3, 500],
          [4, 200],
          [5, 502],
        ],
      );
      for (const result of results) assert.ok(!result.body.includes(KEY), 'the key is scrubbed');
      const malformed = JSON.parse(results[0]?.body ?? '') as { type: string; error: { type: string } };
      assert.deepEqual([malformed.type, malformed.error.type], ['error', 'api_error']);
      assert.equal(results[4]?.usage?.prompt_tokens, 0);
      assert.ok((results[4]?.usage?.completion_tokens ?? Infinity) <= 100_000_000, 'an absurd count is bounded');
      // Chat lines: the same hostile results in the gateway's error shape.
      const chat = await collect(api, batchId, '/v1/chat/completions');
      assert.equal((JSON.parse(chat[0]?.body ?? '') as { code: string }).code, 'upstream_invalid_response');
    } finally {
      delete mock.batches.options.rawResults;
    }
  });

  test('refusals and bounds: a 4xx before any batch exists upstream (the gateway then runs the lines)', async () => {
    const creates = mock.of('POST', '/v1/messages/batches').length;
    // A chat line the translator refuses (n > 1): nothing is sent.
    await assert.rejects(
      api.submit(submission([{ ...chatLine(0, 'x'), body: { ...chatLine(0, 'x').body, n: 3 } }]), signal()),
      (e: unknown) => isGatewayError(e) && e.status === 400,
    );
    // Over Anthropic's 100,000 requests: refused before sending.
    const many = Array.from({ length: 100_001 }, (_, i) => messagesLine(i, 'x'));
    await assert.rejects(
      api.submit(submission(many), signal()),
      (e: unknown) => isGatewayError(e) && e.code === 'batch_input_invalid' && e.status === 400,
    );
    assert.equal(mock.of('POST', '/v1/messages/batches').length, creates);
    // The upstream refuses the create (Anthropic's own size check): its 4xx.
    mock.batches.options.createStatus = 413;
    try {
      await assert.rejects(
        api.submit(submission([messagesLine(0, 'x')]), signal()),
        (e: unknown) => isGatewayError(e) && e.status === 413,
      );
    } finally {
      delete mock.batches.options.createStatus;
    }
    await assert.rejects(api.status('msgbatch_nope', signal()), (e: unknown) => isGatewayError(e));
  });
});
