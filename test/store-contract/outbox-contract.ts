/** The contract every webhook-outbox backend passes: durable, leased claims, retries, dead letters, redelivery. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { OutboxStore } from '../../src/store/store-contract.js';

export interface OutboxHarness {
  outbox: OutboxStore;
  /** A second handle on the same data (another instance), when the backend can offer one. */
  other?: OutboxStore;
  close(): Promise<void>;
}

export function outboxContract(name: string, make: () => Promise<OutboxHarness>): void {
  describe(`webhook outbox contract: ${name}`, () => {
    let harness: OutboxHarness | undefined;
    const store = (): OutboxStore => {
      assert.ok(harness);
      return harness.outbox;
    };
    before(async () => {
      harness = await make();
    });
    after(async () => {
      await harness?.close();
    });
    const fresh = (sub = `s-${randomUUID()}`) => {
      const eventId = `evt_${randomUUID()}`;
      return { id: `${eventId}:${sub}`, eventId, subscription: sub, body: `{"id":"${eventId}"}` };
    };

    test('an enqueued delivery is claimed once, with its body, and is leased: not due again until the lease ends', async () => {
      const now = Date.now();
      const d = fresh();
      await store().enqueue([d], now);
      const claimed = await store().claim(d.subscription, 10, 30_000, now);
      assert.deepEqual(
        claimed.map((c) => [c.id, c.eventId, c.body, c.attempts, c.state]),
        [[d.id, d.eventId, d.body, 0, 'pending']],
      );
      assert.deepEqual(await store().claim(d.subscription, 10, 30_000, now + 29_999), [], 'leased');
      const again = await store().claim(d.subscription, 10, 30_000, now + 30_000);
      assert.deepEqual(
        again.map((c) => c.id),
        [d.id],
        'a claim whose holder never reported is due again after the lease',
      );
    });

    test('enqueueing the same delivery id twice keeps one', async () => {
      const now = Date.now();
      const d = fresh();
      await store().enqueue([d], now);
      await store().enqueue([{ ...d, body: '{"changed":true}' }], now);
      const claimed = await store().claim(d.subscription, 10, 1_000, now);
      assert.deepEqual(
        claimed.map((c) => c.body),
        [d.body],
      );
    });

    test('claims are per subscription and bounded by the limit, oldest first', async () => {
      const now = Date.now();
      const sub = `s-${randomUUID()}`;
      const items = [fresh(sub), fresh(sub), fresh(sub)];
      for (const [i, item] of items.entries()) await store().enqueue([item], now + i);
      await store().enqueue([fresh()], now);
      const first = await store().claim(sub, 2, 10_000, now + 10);
      assert.deepEqual(
        first.map((c) => c.id),
        [items[0]?.id, items[1]?.id],
      );
      const rest = await store().claim(sub, 2, 10_000, now + 10);
      assert.deepEqual(
        rest.map((c) => c.id),
        [items[2]?.id],
      );
    });

    test('retryLater keeps the delivery pending, due at the given time, counting attempts and the last error', async () => {
      const now = Date.now();
      const d = fresh();
      await store().enqueue([d], now);
      await store().claim(d.subscription, 1, 60_000, now);
      await store().retryLater(d.id, 1, now + 5_000, 'HTTP 500');
      assert.deepEqual(await store().claim(d.subscription, 1, 60_000, now + 4_999), []);
      const due = await store().claim(d.subscription, 1, 60_000, now + 5_000);
      assert.deepEqual(
        due.map((c) => [c.attempts, c.lastError]),
        [[1, 'HTTP 500']],
      );
    });

    test('delivered: never claimed again; the backlog counts pending deliveries only', async () => {
      const now = Date.now();
      const d = fresh();
      await store().enqueue([d], now);
      assert.equal(await store().backlog(d.subscription), 1);
      await store().claim(d.subscription, 1, 1_000, now);
      await store().delivered(d.id, now + 10);
      assert.equal(await store().backlog(d.subscription), 0);
      assert.deepEqual(await store().claim(d.subscription, 1, 1_000, now + 60_000), []);
      assert.equal((await store().get(d.id))?.state, 'delivered');
    });

    test('dead letters are listed, not claimed, and redelivered from zero attempts', async () => {
      const now = Date.now();
      const d = fresh();
      await store().enqueue([d], now);
      await store().claim(d.subscription, 1, 1_000, now);
      await store().deadLetter(d.id, 8, 'HTTP 503 after 8 attempts', now + 1);
      assert.deepEqual(await store().claim(d.subscription, 1, 1_000, now + 60_000), []);
      const dead = (await store().listDead(1_000)).find((x) => x.id === d.id);
      assert.deepEqual([dead?.state, dead?.attempts, dead?.lastError], ['dead', 8, 'HTTP 503 after 8 attempts']);
      assert.equal(await store().redeliver([d.id, 'no-such-delivery'], now + 2), 1);
      assert.equal(await store().redeliver([d.id], now + 2), 0, 'no longer dead');
      const back = await store().claim(d.subscription, 1, 1_000, now + 2);
      assert.deepEqual(
        back.map((c) => [c.id, c.attempts, c.state]),
        [[d.id, 0, 'pending']],
      );
    });

    test('a delivery finished by one holder cannot be moved by a late report of another', async () => {
      const now = Date.now();
      const d = fresh();
      await store().enqueue([d], now);
      await store().claim(d.subscription, 1, 1_000, now);
      await store().delivered(d.id, now + 1);
      await store().retryLater(d.id, 3, now + 2, 'late');
      await store().deadLetter(d.id, 3, 'late', now + 2);
      assert.equal((await store().get(d.id))?.state, 'delivered');
    });

    test('two instances claiming at once never get the same delivery', async () => {
      const other = harness?.other;
      if (!other) return;
      const now = Date.now();
      const sub = `s-${randomUUID()}`;
      const items = Array.from({ length: 20 }, () => fresh(sub));
      await store().enqueue(items, now);
      const [a, b] = await Promise.all([store().claim(sub, 15, 10_000, now), other.claim(sub, 15, 10_000, now)]);
      const ids = [...a, ...b].map((c) => c.id);
      assert.equal(ids.length, 20);
      assert.equal(new Set(ids).size, 20);
    });
  });
}
