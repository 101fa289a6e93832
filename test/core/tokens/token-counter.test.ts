/**
 * The token-counting thread: its lane takes the counts in turns, slice by slice (a short count is not kept behind a
 * long one), drops a cancelled count, and says why it could not count; the gateway's side bounds the thread's
 * backlog (503 tokenizer_busy) and drops the count of a caller that left.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import {
  serveTokenCounts,
  type CountPort,
  type CountReply,
  type CountRequest,
} from '../../../src/core/tokens/token-count-lane.js';
import { TokenCounter } from '../../../src/core/tokens/token-counter.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { ClientGoneError } from '../../../src/errors/client-gone.js';
import { waitFor } from '../../helpers/wait.js';

/** An encoder that takes about 0.2 ms a piece and counts one token a character. */
const slowEncoder = {
  countTokens(text: string) {
    const until = performance.now() + 0.2;
    while (performance.now() < until);
    return text.length;
  },
};

function lane(load: () => Promise<typeof slowEncoder>) {
  const channel = new MessageChannel();
  serveTokenCounts(channel.port1 as unknown as CountPort, load);
  const replies: Array<CountReply & { at: number }> = [];
  channel.port2.on('message', (reply: CountReply) => replies.push({ ...reply, at: performance.now() }));
  return {
    replies,
    send: (request: CountRequest) => channel.port2.postMessage(request),
    close: () => {
      channel.port1.close();
      channel.port2.close();
    },
  };
}

describe('the counting lane', () => {
  test('a short count is answered while a long one is still in progress; a cancelled count is never answered', async () => {
    const l = lane(async () => slowEncoder);
    try {
      const long = 'x'.repeat(256 * 2000); // 2,000 pieces: about 400 ms
      l.send({ id: 1, encoding: 'o200k_base', texts: [long] });
      l.send({ id: 2, encoding: 'o200k_base', texts: [long] });
      l.send({ id: 3, encoding: 'o200k_base', texts: ['hello', 'a'.repeat(300)] });
      l.send({ cancel: 2 });
      await waitFor('the long count', () => l.replies.some((r) => r.id === 1));
      const short = l.replies.find((r) => r.id === 3);
      const first = l.replies.find((r) => r.id === 1);
      assert.deepEqual(short && 'counts' in short ? short.counts : undefined, [5, 300]);
      assert.ok(short && first && short.at < first.at, 'the short count came first');
      assert.deepEqual('counts' in first ? first.counts : undefined, [long.length]);
      l.send({ id: 4, encoding: 'o200k_base', texts: ['end'] });
      await waitFor('the last count', () => l.replies.some((r) => r.id === 4));
      assert.equal(l.replies.filter((r) => r.id === 2).length, 0);
    } finally {
      l.close();
    }
  });

  test('an encoder that cannot load is an error answer, and the next request tries again', async () => {
    let loads = 0;
    const l = lane(async () => {
      loads++;
      if (loads === 1) throw new Error('no such file');
      return slowEncoder;
    });
    try {
      l.send({ id: 1, encoding: 'cl100k_base', texts: ['a'] });
      await waitFor('the error', () => l.replies.length === 1);
      assert.match((l.replies[0] as { error?: string }).error ?? '', /loading cl100k_base: Error: no such file/);
      l.send({ id: 2, encoding: 'cl100k_base', texts: ['abc'] });
      await waitFor('the count', () => l.replies.length === 2);
      assert.deepEqual((l.replies[1] as { counts?: number[] }).counts, [3]);
    } finally {
      l.close();
    }
  });
});

function randomLetters(n: number): string {
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  let text = '';
  for (let i = 0; i < n; i++) text += letters[Math.floor(Math.random() * 26)];
  return text;
}

describe('the counting thread, seen from the gateway', () => {
  test('a large count beyond the backlog bound is a 503 tokenizer_busy; a small one is still taken, and answered first', async () => {
    const counter = new TokenCounter({ maxBacklogChars: 400_000, smallCountChars: 1_000 });
    assert.deepEqual(await counter.count('o200k_base', ['Hello'], undefined), [1]); // the thread and its encoder loaded
    const big = counter.count('o200k_base', [randomLetters(300_000)], undefined);
    const refused = await counter.count('o200k_base', [randomLetters(200_000)], undefined).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(refused instanceof GatewayError && refused.code === 'tokenizer_busy', String(refused));
    assert.equal(refused.status, 503);
    assert.deepEqual(refused.details, {
      characters: 200_000,
      backlog_characters: 300_000,
      max_backlog_characters: 400_000,
    });
    assert.equal(refused.headers?.['retry-after'], '1');
    let bigDone = false;
    void big.then(() => (bigDone = true));
    assert.deepEqual(await counter.count('o200k_base', ['Hello world', '', 'Hello'], undefined), [2, 0, 1]);
    assert.equal(bigDone, false, 'the small count did not wait for the large one');
    assert.ok(((await big)[0] as number) > 100_000);
  });

  test('a count whose caller left is dropped: it fails with ClientGoneError and the thread goes on to the next', async () => {
    const counter = new TokenCounter();
    await counter.count('o200k_base', ['warm'], undefined);
    const client = { gone: false };
    const started = performance.now();
    const abandoned = counter.count('o200k_base', [randomLetters(1_000_000)], client).then(
      () => undefined,
      (error: unknown) => error,
    );
    setTimeout(() => (client.gone = true), 50);
    assert.ok((await abandoned) instanceof ClientGoneError);
    assert.ok(performance.now() - started < 1_000, `dropped after ${Math.round(performance.now() - started)} ms`);
    const next = performance.now();
    assert.deepEqual(await counter.count('o200k_base', ['Hello'], undefined), [1]);
    assert.ok(performance.now() - next < 500, `the next count waited ${Math.round(performance.now() - next)} ms`);
  });
});
