/**
 * A streamed turn's search calls are bounded in number as well as in argument text: an upstream that streams a
 * thousand `file_search` calls of 64 KB arguments each made the gateway hold 64 MB for them and write a thousand
 * messages into the next turn. Past MAX_GATEWAY_CALLS_PER_TURN they are taken out of the stream and forgotten.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { StreamChunk } from '../../../src/providers/provider-contract.js';
import { MAX_GATEWAY_CALLS_PER_TURN, TurnReader } from '../../../src/surfaces/tool-turns/turn-reader.js';
import { splitCalls } from '../../../src/surfaces/tool-turns/loop-complete.js';

const runsSearch = (name: string): boolean => name === 'file_search';

const delta = (toolCall: Record<string, unknown>): StreamChunk => ({
  chunk: {
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { tool_calls: [toolCall] }, finish_reason: null }],
  } as StreamChunk['chunk'],
});

test('a streamed turn keeps its first MAX_GATEWAY_CALLS_PER_TURN search calls; the rest never reach the caller', () => {
  const reader = new TurnReader(true, runsSearch);
  const big = JSON.stringify({ queries: ['x'.repeat(60_000)] });
  const shown: StreamChunk[] = [];
  for (let index = 0; index < 1_000; index++) {
    const named = delta({ index, id: `call_${index}`, function: { name: 'file_search', arguments: '' } });
    shown.push(...reader.read([named, delta({ index, function: { arguments: big } })]));
  }
  shown.push(...reader.read([delta({ index: 1_000, id: 'mine', function: { name: 'lookup', arguments: '{}' } })]));
  const calls = reader.gatewayCalls();
  assert.equal(calls.length, MAX_GATEWAY_CALLS_PER_TURN);
  assert.deepEqual(
    calls.map((call) => call.id),
    Array.from({ length: MAX_GATEWAY_CALLS_PER_TURN }, (_, i) => `call_${i}`),
  );
  assert.equal(calls[0]?.function.arguments, big);
  assert.doesNotMatch(JSON.stringify(shown.map((item) => item.chunk)), /file_search|xxxx/);
  assert.match(JSON.stringify(shown.map((item) => item.chunk)), /lookup/, "the caller's own call still goes");
  assert.equal(reader.callsTheirs, true);
});

test('a whole answer keeps its first MAX_GATEWAY_CALLS_PER_TURN search calls too', () => {
  const call = (i: number, name = 'file_search') => ({
    id: `call_${i}`,
    type: 'function' as const,
    function: { name, arguments: '{"queries":["q"]}' },
  });
  const { ours, theirs } = splitCalls(
    [...Array.from({ length: 500 }, (_, i) => call(i)), call(500, 'lookup')],
    runsSearch,
  );
  assert.equal(ours.length, MAX_GATEWAY_CALLS_PER_TURN);
  assert.deepEqual(
    theirs.map((c) => c.id),
    ['call_500'],
  );
});
