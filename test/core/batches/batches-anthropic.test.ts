/**
 * Anthropic's Message Batches through `@anthropic-ai/sdk` (`messages.batches`): against a translated upstream (an
 * OpenAI-shaped mock) and a native Anthropic one, each line run by the gateway through its own Messages route as a
 * call of the batch's owner; another caller sees none of it; cancel ends the lines not started.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { ANTHROPIC_MOCK_ID } from '../../helpers/upstreams/anthropic.js';
import { MOCK_CONTENT } from '../../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, useGateway } from '../../helpers/gateway.js';
import { QUICK_BATCHES, makeKey, untilEnded } from '../../helpers/batch-fixtures.js';
import { waitFor } from '../../helpers/wait.js';

const params = (text: string, extra: Record<string, unknown> = {}) => ({
  model: 'gpt-4o-mini',
  max_tokens: 32,
  messages: [{ role: 'user' as const, content: text }],
  ...extra,
});

async function resultsOf(client: Anthropic, id: string) {
  const results: Anthropic.Messages.MessageBatchIndividualResponse[] = [];
  for await (const line of await client.messages.batches.results(id)) results.push(line);
  return results;
}

describe('Anthropic Message Batches over a translated (OpenAI-shaped) upstream', () => {
  const fixture = useGateway({ configFile: { name: 'gw.yaml', text: QUICK_BATCHES } });

  test('create, retrieve until ended, results: each line answered once, as the owner; another caller gets 404', async () => {
    const alice = new Anthropic({ baseURL: fixture.gw.url, apiKey: await makeKey(fixture.gw.url, 'alice') });
    const bob = new Anthropic({ baseURL: fixture.gw.url, apiKey: await makeKey(fixture.gw.url, 'bob') });
    const created = await alice.messages.batches.create({
      requests: [
        { custom_id: 'first', params: params('one') },
        { custom_id: 'second', params: params('two') },
        // Not a Messages request (messages must be an array): the gateway's route refuses it, as it would the owner's own call.
        { custom_id: 'broken', params: { ...params('x'), messages: 'not a list' } as never },
        { custom_id: 'third', params: params('three') },
      ],
    });
    assert.match(created.id, /^msgbatch_[0-9a-f]{32}$/);
    assert.equal(created.type, 'message_batch');
    assert.equal(created.processing_status, 'in_progress');
    assert.equal(created.results_url, null);

    const ended = await untilEnded('the batch to end', () => alice.messages.batches.retrieve(created.id));
    assert.deepEqual(ended.request_counts, { processing: 0, succeeded: 3, errored: 1, canceled: 0, expired: 0 });
    assert.ok(ended.ended_at !== null && ended.results_url?.endsWith(`/v1/messages/batches/${created.id}/results`));

    const results = await resultsOf(alice, created.id);
    assert.deepEqual(
      results.map((r) => [r.custom_id, r.result.type]),
      [
        ['first', 'succeeded'],
        ['second', 'succeeded'],
        ['broken', 'errored'],
        ['third', 'succeeded'],
      ],
    );
    const first = results[0]?.result;
    assert.ok(first?.type === 'succeeded');
    assert.equal(first.message.type, 'message');
    assert.deepEqual(first.message.content, [{ type: 'text', text: MOCK_CONTENT }]);
    const broken = results[2]?.result;
    assert.ok(broken?.type === 'errored');
    assert.equal(broken.error.type, 'error');
    assert.equal(broken.error.error.type, 'invalid_request_error');
    // Each valid line reached the upstream once, translated to chat; the broken one never did.
    const sent = fixture.mock.chatRequests().map((r) => (r.json as { messages: Array<{ content: string }> }).messages);
    assert.deepEqual(sent.map((m) => m.at(-1)?.content).sort(), ['one', 'three', 'two']);
    // Usage records: the owner's calls on the messages route, as if alice had made them herself.
    await waitFor('usage records of the lines', () => {
      const rows = fixture.gw.store.db
        .prepare(`SELECT count(*) AS n FROM usage_records WHERE caller LIKE 'key:%' AND route = 'messages'`)
        .get() as { n: number };
      return rows.n === 4;
    });

    // Bob: nothing of alice's exists.
    await assert.rejects(
      bob.messages.batches.retrieve(created.id),
      (e: unknown) => (e as { status?: number }).status === 404,
    );
    await assert.rejects(
      bob.messages.batches.cancel(created.id),
      (e: unknown) => (e as { status?: number }).status === 404,
    );
    await assert.rejects(resultsOf(bob, created.id), (e: unknown) => (e as { status?: number }).status === 404);
    await assert.rejects(
      bob.messages.batches.delete(created.id),
      (e: unknown) => (e as { status?: number }).status === 404,
    );
    assert.equal((await bob.messages.batches.list()).data.length, 0);
    const listed = await alice.messages.batches.list();
    assert.deepEqual(
      listed.data.map((b) => b.id),
      [created.id],
    );
    // Ended: alice may delete it; then it is gone for her too.
    assert.deepEqual(await alice.messages.batches.delete(created.id), {
      id: created.id,
      type: 'message_batch_deleted',
    });
    await assert.rejects(
      alice.messages.batches.retrieve(created.id),
      (e: unknown) => (e as { status?: number }).status === 404,
    );
  });

  test('cancel: lines in flight finish, lines not started end as canceled and never reach the upstream', async () => {
    const client = new Anthropic({ baseURL: fixture.gw.url, apiKey: ADMIN_TOKEN });
    fixture.mock.defaultBehavior = { kind: 'json', delayMs: 150 };
    const created = await client.messages.batches.create({
      requests: Array.from({ length: 60 }, (_, i) => ({ custom_id: `line-${i}`, params: params(`n${i}`) })),
    });
    await waitFor('a first line at the upstream', () => fixture.mock.chatRequests().length > 0);
    const cancelling = await client.messages.batches.cancel(created.id);
    assert.equal(cancelling.processing_status, 'canceling');
    assert.ok(cancelling.cancel_initiated_at !== null);
    const ended = await untilEnded('the cancelled batch to end', () => client.messages.batches.retrieve(created.id));
    const counts = ended.request_counts;
    assert.ok(counts.canceled > 0, JSON.stringify(counts));
    assert.equal(counts.succeeded + counts.canceled, 60);
    assert.equal(fixture.mock.chatRequests().length, counts.succeeded);
    const results = await resultsOf(client, created.id);
    assert.equal(results.filter((r) => r.result.type === 'canceled').length, counts.canceled);
  });

  test('create refuses a duplicate custom_id and a streamed request, naming the field', async () => {
    const client = new Anthropic({ baseURL: fixture.gw.url, apiKey: ADMIN_TOKEN });
    await assert.rejects(
      client.messages.batches.create({
        requests: [
          { custom_id: 'same', params: params('a') },
          { custom_id: 'same', params: params('b') },
        ],
      }),
      (e: unknown) => {
        const error = e as { status?: number; error?: { details?: { field?: string } } };
        return error.status === 400 && error.error?.details?.field === 'requests[1].custom_id';
      },
    );
    await assert.rejects(
      client.messages.batches.create({
        requests: [{ custom_id: 's', params: { ...params('a'), stream: true } as never }],
      }),
      (e: unknown) => (e as { status?: number }).status === 400,
    );
  });
});

describe('Anthropic Message Batches over a native Anthropic upstream, run by the gateway', () => {
  // `batch: gateway`: the lines are run by the gateway one by one (forwarding to Anthropic's own Message Batches
  // is test/core/batches/batches-native-anthropic.test.ts).
  const fixture = useGateway({
    upstream: 'anthropic',
    key: 'sk-ant-batch-test-0123456789',
    models: ['- { id: claude-batch, upstream: claude, upstream_model: claude-3-5-haiku-20241022 }'],
    upstreamLines: ['batch: gateway'],
  });

  test('each line forwarded natively to the upstream once, its message passed through', async () => {
    const client = new Anthropic({ baseURL: fixture.gw.url, apiKey: ADMIN_TOKEN });
    const created = await client.messages.batches.create({
      requests: ['a', 'b', 'c'].map((id) => ({
        custom_id: id,
        params: params(`say ${id}`, { model: 'claude-batch' }),
      })),
    });
    const ended = await untilEnded('the batch to end', () => client.messages.batches.retrieve(created.id));
    assert.equal(ended.request_counts.succeeded, 3);
    const results = await resultsOf(client, created.id);
    for (const result of results) {
      assert.ok(result.result.type === 'succeeded');
      assert.equal(result.result.message.id, ANTHROPIC_MOCK_ID);
    }
    const sent = fixture.mock
      .messageRequests()
      .map((r) => r.body as unknown as { model: string; messages: Array<{ content: string }> });
    assert.deepEqual(sent.map((b) => b.messages[0]?.content).sort(), ['say a', 'say b', 'say c']);
    assert.ok(sent.every((b) => b.model === 'claude-3-5-haiku-20241022'));
  });
});
