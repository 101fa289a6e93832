/**
 * Issue 41: an upstream that repeats the key it was sent never shows it to a chat caller, as it never shows it to a
 * Messages or native Gemini caller: not in a JSON answer, not in a stream however the stream splits the key over its
 * chunks (a few characters each, as a model's tokens would), not in a tool call's arguments, not in a batch's output
 * file. Real sockets: the mock upstreams echo the key they were sent.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ADMIN_TOKEN, authHeaders, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { dataFrames, readStream } from '../helpers/sse-client.js';
import type { Behavior } from '../helpers/upstreams/openai.js';
import { QUICK_BATCHES, makeKey, untilEnded } from '../helpers/batch-fixtures.js';
import { KeyScrubber, scrubAnswer } from '../../src/secrets/key-scrubber.js';
import { KeyTexts } from '../../src/secrets/key-texts.js';
import { chatLineResult } from '../../src/providers/gemini/gemini-batch-results.js';
import { messageBatchResult } from '../../src/providers/anthropic/message-batch-results.js';

const UPSTREAM_KEY = 'sk-proj-chatScrubUpstreamKey0123456789abcdefXYZ';
const OWN_KEY = 'sk-callers-own-provider-key-9876543210zyxwvu';
const CHAT = '/v1/chat/completions';

const keyOf = (req: IncomingMessage) => String(req.headers.authorization ?? '').replace(/^Bearer /, '');

/** Neither the key, nor its first or last 20 characters, nor a run of 20 from its middle. */
function assertNoKey(text: string, key: string): void {
  for (const piece of [key, key.slice(0, 20), key.slice(-20), key.slice(8, 28)])
    assert.ok(!text.includes(piece), `${JSON.stringify(piece)} in ${text.slice(0, 600)}`);
}

/** `text` cut into pieces of `size` characters. */
function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Every delta text of a chat stream, assembled as a client would: content and the first tool call's arguments. */
function assembled(text: string): { content: string; args: string; ids: string } {
  let content = '';
  let args = '';
  let ids = '';
  for (const data of dataFrames(text)) {
    if (data === '[DONE]') continue;
    const chunk = JSON.parse(data) as {
      id?: string;
      model?: string;
      choices: Array<{ delta: { content?: string; tool_calls?: Array<{ function?: { arguments?: string } }> } }>;
    };
    ids += `${chunk.id ?? ''} ${chunk.model ?? ''}\n`;
    for (const choice of chunk.choices) {
      content += choice.delta.content ?? '';
      for (const call of choice.delta.tool_calls ?? []) args += call.function?.arguments ?? '';
    }
  }
  return { content, args, ids };
}

/** An OpenAI chat stream whose text and tool arguments repeat the key in pieces of `size`, one chunk each. */
function echoingStream(size: number): Behavior {
  return {
    kind: 'raw',
    handler: (req: IncomingMessage, res: ServerResponse) => {
      const key = keyOf(req);
      const frame = (delta: unknown, finish: string | null = null, id = 'chatcmpl-1') =>
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(frame({ role: 'assistant', content: '' }));
      for (const piece of pieces(`Your key is ${key}, the start of it ${key.slice(0, 24)}. Bye`, size))
        res.write(frame({ content: piece }));
      res.write(
        frame({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }] }),
      );
      for (const piece of pieces(`{"key":"${key}"}`, size))
        res.write(frame({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
      // The key in another field of a chunk, whole.
      res.write(frame({}, 'stop', `chatcmpl-${key}`));
      res.end('data: [DONE]\n\n');
    },
  };
}

const echoingJson: Behavior = {
  kind: 'raw',
  handler: (req, res) => {
    const key = keyOf(req);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'chatcmpl-echo',
        object: 'chat.completion',
        created: 1,
        model: key,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: `Your key is ${key}, cut: ${key.slice(0, 24)}` },
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
      }),
    );
  },
};

describe('chat on the OpenAI-compatible passthrough: the key the upstream echoes never reaches the caller', () => {
  const fixture = useGateway({
    env: { UPSTREAM_API_KEY: UPSTREAM_KEY },
    configFile: { name: 'gw.yaml', text: QUICK_BATCHES },
  });
  const chat = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'echo' }], ...extra });

  test('a JSON answer: the configured key and the caller’s X-Upstream-Key, whole, cut, in any field', async () => {
    for (const [headers, key] of [
      [authHeaders(), UPSTREAM_KEY],
      [authHeaders({ 'x-upstream-key': OWN_KEY }), OWN_KEY],
    ] as const) {
      fixture.mock.enqueue(echoingJson);
      const answer = await call(fixture.url(CHAT), { method: 'POST', headers, body: chat() });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(
        fixture.mock.requests.at(-1)?.headers.authorization,
        `Bearer ${key}`,
        'the key the upstream was sent',
      );
      assertNoKey(answer.text, key);
      const completion = answer.json as { model?: string; choices?: Array<{ message: { content: string } }> };
      assert.equal(completion.choices?.[0]?.message.content, 'Your key is [REDACTED], cut: [REDACTED]');
      assert.equal(completion.model, '[REDACTED]');
      assert.deepEqual(answer.json.usage, { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    }
  });

  for (const size of [1, 3, 5, 8]) {
    test(`a stream that splits the key into pieces of ${size} character(s), one chunk each: content, tool arguments and ids scrubbed`, async () => {
      fixture.mock.enqueue(echoingStream(size));
      const streamed = await readStream(fixture.url(CHAT), chat({ stream: true }), authHeaders());
      assert.equal(streamed.status, 200, streamed.text);
      assertNoKey(streamed.text, UPSTREAM_KEY);
      const { content, args, ids } = assembled(streamed.text);
      assertNoKey(content + args + ids, UPSTREAM_KEY);
      // At most the key's first two characters (`sk`, the same for every key) precede a split key's [REDACTED].
      assert.match(content, /^Your key is (?:sk|s)?\[REDACTED\], the start of it (?:sk|s)?\[REDACTED\]\. Bye$/);
      assert.match(args, /^\{"key":"(?:sk|s)?\[REDACTED\]"\}$/);
      assert.match(ids, /chatcmpl-\[REDACTED\]/);
      assert.ok(streamed.text.endsWith('data: [DONE]\n\n'), 'the stream ends as it should');
    });
  }

  test('a stream whose every frame names the key (its model): no frame, decoded in full or by its template, shows it', async () => {
    fixture.mock.enqueue({
      kind: 'raw',
      handler: (req, res) => {
        const frame = (delta: unknown, finish: string | null = null) =>
          `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: keyOf(req), choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(frame({ role: 'assistant', content: '' }));
        for (const word of ['One', ' two', ' three', ' four', ' five', ' six']) res.write(frame({ content: word }));
        res.write(frame({}, 'stop'));
        res.end('data: [DONE]\n\n');
      },
    });
    const streamed = await readStream(fixture.url(CHAT), chat({ stream: true }), authHeaders());
    assert.equal(streamed.status, 200, streamed.text);
    assertNoKey(streamed.text, UPSTREAM_KEY);
    const { content, ids } = assembled(streamed.text);
    assert.equal(content, 'One two three four five six');
    assert.equal(ids.split('\n').filter((line) => line === 'c1 [REDACTED]').length, 8, ids);
  });

  test('a stream with no key in it: its text whole; frames that could not begin a key go out as the upstream wrote them', async () => {
    const frame = (delta: string, finish = 'null') =>
      `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${delta},"finish_reason":${finish}}]}`;
    const plain = ['Hello', ' the', ' skis', ' and', ' dogs', ' sk', ' is a word'];
    // `sk-` is how the key begins: held back until the next piece shows it goes on otherwise.
    const suspicious = ['Then', ' sk', '-', 'learn', ' ok'];
    for (const texts of [plain, suspicious]) {
      const frames = [
        frame('{"role":"assistant","content":""}'),
        ...texts.map((text) => frame(`{"content":${JSON.stringify(text)}}`)),
        frame('{}', '"stop"'),
      ];
      fixture.mock.enqueue({
        kind: 'raw',
        handler: (_req, res) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          for (const f of frames) res.write(`data: ${f}\n\n`);
          res.end('data: [DONE]\n\n');
        },
      });
      const streamed = await readStream(fixture.url(CHAT), chat({ stream: true }), authHeaders());
      assert.equal(streamed.status, 200);
      assert.equal(assembled(streamed.text).content, texts.join(''), 'the text, whole');
      if (texts === plain) assert.deepEqual(dataFrames(streamed.text), [...frames, '[DONE]'], 'byte for byte');
      else assert.notDeepEqual(dataFrames(streamed.text), [...frames, '[DONE]'], 'cut otherwise');
    }
  });

  test('the output file of a batch of chat lines', async () => {
    const key = await makeKey(fixture.gw.url, 'scrub-batch');
    const headers = { authorization: `Bearer ${key}` };
    fixture.mock.defaultBehavior = echoingJson;
    const line = (id: string) =>
      JSON.stringify({ custom_id: id, method: 'POST', url: CHAT, body: JSON.parse(chat()) as unknown });
    const form = new FormData();
    form.append('purpose', 'batch');
    form.append('file', new Blob([`${line('a')}\n${line('b')}\n`]), 'input.jsonl');
    const uploaded = await fetch(fixture.url('/v1/files'), { method: 'POST', headers, body: form });
    assert.equal(uploaded.status, 200);
    const file = (await uploaded.json()) as { id: string };
    const created = await call(fixture.url('/v1/batches'), {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: file.id, endpoint: CHAT, completion_window: '24h' }),
    });
    assert.equal(created.status, 200, created.text);
    const done = await untilEnded('the batch to end', async () => {
      const got = await call(fixture.url(`/v1/batches/${String(created.json.id)}`), { headers });
      return got.json as { status?: string; output_file_id?: string };
    });
    assert.equal(done.status, 'completed');
    const output = await call(fixture.url(`/v1/files/${String(done.output_file_id)}/content`), { headers });
    assert.equal(output.status, 200);
    assertNoKey(output.text, UPSTREAM_KEY);
    const lines = output.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { response: { body: { choices: Array<{ message: { content: string } }> } } });
    assert.equal(lines.length, 2);
    for (const l of lines)
      assert.equal(l.response.body.choices[0]?.message.content, 'Your key is [REDACTED], cut: [REDACTED]');
  });
});

describe('chat on Anthropic, translated: the key never reaches the caller', () => {
  const KEY = 'sk-ant-api03-chatScrubAnthropicKey0123456789abcdefghij';
  const fixture = useGateway({
    upstream: 'anthropic',
    key: KEY,
    models: ['- { id: claude, upstream: claude, upstream_model: claude-sonnet-4-5 }'],
  });
  const body = (stream: boolean) =>
    JSON.stringify({ model: 'claude', stream, messages: [{ role: 'user', content: 'echo' }] });
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };

  test('JSON', async () => {
    fixture.mock.enqueue({ kind: 'message', text: `I was called with ${KEY} and ${KEY.slice(3, 30)}` });
    const answer = await call(`${fixture.gw.url}${CHAT}`, { method: 'POST', headers, body: body(false) });
    assert.equal(answer.status, 200, answer.text);
    assertNoKey(answer.text, KEY);
    const completion = answer.json as { choices?: Array<{ message: { content: string } }> };
    assert.equal(completion.choices?.[0]?.message.content, 'I was called with [REDACTED] and [REDACTED]');
  });

  test('a stream that splits the key over its text deltas', async () => {
    fixture.mock.enqueue({ kind: 'stream', text: pieces(`I was called with ${KEY}. Done`, 4) });
    const streamed = await readStream(`${fixture.gw.url}${CHAT}`, body(true), headers);
    assert.equal(streamed.status, 200, streamed.text);
    assertNoKey(streamed.text, KEY);
    assert.match(assembled(streamed.text).content, /^I was called with (?:sk|s)?\[REDACTED\]\. Done$/);
    assert.ok(streamed.text.endsWith('data: [DONE]\n\n'));
  });
});

describe('native answers: only the keys of the call, in a bounded time', () => {
  const KEY = 'sk-ant-api03-nativeScrubAnthropicKey0123456789abcdefghij';
  const fixture = useGateway({
    upstream: 'anthropic',
    key: KEY,
    models: ['- { id: claude, upstream: claude, upstream_model: claude-sonnet-4-5 }'],
  });
  const WORDS = 'a key-value-store, sk-learn-tutorial, pk-test-values and xai-grok-models';

  test('a Messages stream forwarded natively: the key is scrubbed, words that merely look like keys are not', async () => {
    fixture.mock.enqueue({ kind: 'stream', text: [`${WORDS}; the key `, KEY, '.'] });
    const streamed = await readStream(
      `${fixture.gw.url}/v1/messages`,
      JSON.stringify({ model: 'claude', max_tokens: 16, stream: true, messages: [{ role: 'user', content: 'x' }] }),
      { 'x-api-key': ADMIN_TOKEN, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    );
    assert.equal(streamed.status, 200, streamed.text);
    assertNoKey(streamed.text, KEY);
    const text = dataFrames(streamed.text)
      .map((d) => JSON.parse(d) as { type: string; delta?: { text?: string } })
      .map((e) => (e.type === 'content_block_delta' ? (e.delta?.text ?? '') : ''))
      .join('');
    assert.equal(text, `${WORDS}; the key [REDACTED].`);
  });

  test('native batch results: a Gemini chat line and an Anthropic Messages line are scrubbed of the batch key', () => {
    const gemini = chatLineResult(
      0,
      {
        response: {
          candidates: [{ content: { role: 'model', parts: [{ text: `key ${UPSTREAM_KEY}` }] }, finishReason: 'STOP' }],
        },
      },
      { upstream: 'gem', model: 'gemini-2.0-flash', secrets: [UPSTREAM_KEY] },
    );
    assert.equal(gemini.status, 200, gemini.body);
    assertNoKey(gemini.body, UPSTREAM_KEY);
    const message = {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: [{ type: 'text', text: `${WORDS} ${UPSTREAM_KEY}` }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 1, output_tokens: 1 },
    };
    const line = messageBatchResult(JSON.stringify({ custom_id: 'line-0', result: { type: 'succeeded', message } }), {
      upstream: 'claude',
      secrets: [UPSTREAM_KEY],
      endpoint: '/v1/messages',
    });
    assert.equal(line?.status, 200);
    assertNoKey(line?.body ?? '', UPSTREAM_KEY);
    assert.ok(line?.body.includes(WORDS), 'only the key');
  });

  test('an 8 MB answer holding the key is scrubbed in the time of a few parses of it (one search), not a scan of every window', () => {
    const filler = 'The quick brown fox jumps over the lazy dog; sk- and key- are words. '.repeat(60_000);
    const text = JSON.stringify({ text: `${filler}${UPSTREAM_KEY} ${UPSTREAM_KEY.slice(4, 30)} ${filler}` });
    const bytes = Buffer.from(text);
    // The least CPU time of five runs (ms): what the work costs, not what other processes took of the core.
    const fastest = (run: () => unknown) => {
      let best = Infinity;
      for (let i = 0; i < 5; i++) {
        const started = process.cpuUsage();
        run();
        const used = process.cpuUsage(started);
        best = Math.min(best, (used.user + used.system) / 1_000);
      }
      return best;
    };
    let scrubbed = '';
    const scrub = fastest(() => (scrubbed = scrubAnswer(bytes, text, [UPSTREAM_KEY, OWN_KEY]).toString()));
    const parse = fastest(() => JSON.parse(text));
    assertNoKey(scrubbed, UPSTREAM_KEY);
    assert.equal(
      scrubbed.length,
      text.length - UPSTREAM_KEY.length - 26 + 2 * '[REDACTED]'.length,
      'the key and its piece',
    );
    assert.ok(scrub < 10 * parse + 20, `scrubbing ${scrub.toFixed(1)} ms against parsing ${parse.toFixed(1)} ms`);
  });
});

describe('KeyTexts: a text sent in pieces is scrubbed as if whole', () => {
  const scrubber = KeyScrubber.of([UPSTREAM_KEY, OWN_KEY]) as KeyScrubber;
  /** `text` through a stream's scrubbing in pieces of `sizes` (cycled), and its end. */
  const streamed = (text: string, sizes: number[]) => {
    const texts = new KeyTexts(scrubber);
    let out = '';
    for (let at = 0, i = 0; at < text.length; i++) {
      const size = sizes[i % sizes.length] as number;
      out += texts.push('t', text.slice(at, at + size));
      at += size;
    }
    return out + texts.end('t');
  };

  test('every cut of a key, whole or its first 20 characters, in pieces of 1 to 9: no key, no run of 15 of one', () => {
    for (const key of [UPSTREAM_KEY, OWN_KEY])
      for (const secret of [key, key.slice(0, 20)])
        for (let cut = 0; cut <= secret.length; cut++)
          for (const sizes of [[1], [2], [3], [4, 1], [9], [cut || 1, 3]]) {
            const text = `before ${secret.slice(0, cut)}${secret.slice(cut)} after`;
            const out = streamed(text, sizes);
            assert.ok(!out.includes(secret.slice(2)), `${JSON.stringify(sizes)} ${cut}: ${out}`);
            assert.equal(scrubber.scrub(out), out, `a run left in ${out}`);
            assert.match(out, /^before (?:sk|s)?\[REDACTED\] after$/);
          }
  });

  test('a text without a key comes out whole, however it is cut, and holds back at most a key', () => {
    const text = 'sk- is how keys begin; sk-proj and sk-callers are words here, and so is chatScrub alone.';
    for (const sizes of [[1], [2], [3], [5], [7, 2], [64]]) assert.equal(streamed(text, sizes), text);
    const texts = new KeyTexts(scrubber);
    const withheld = texts.push('t', UPSTREAM_KEY.slice(0, -1));
    assert.equal(withheld, '', 'all but the last character of a key: held');
    assert.equal(texts.push('t', 'x'), '[REDACTED]x', 'the next piece decides: a cut key is still a run of one');
  });
});
