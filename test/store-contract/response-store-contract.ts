/** The contract every store of Responses API turns passes (SQLite in memory, on a file, Redis). */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ResponseStore, StoredConversationTurn } from '../../src/store/store-contract.js';

export interface ResponseStoreHarness {
  responses: ResponseStore;
  close(): Promise<void>;
}

const T0 = 1_700_000_000_000;
const MINUTE = 60_000;
/** No caller bound in the way (what the tests that are not about it pass). */
const UNBOUNDED = { ttlMs: MINUTE, maxCallerBytes: Number.MAX_SAFE_INTEGER };

const id = () => `resp_${randomUUID().replaceAll('-', '')}`;
const caller = () => `key:${randomUUID()}`;

/** A turn whose texts carry `text`; a continuation of `parent` when given (depth and sizes follow from it). */
function turn(
  text: string,
  options: { parent?: { id: string; turn: StoredConversationTurn }; bytes?: number } = {},
): StoredConversationTurn {
  const messages = JSON.stringify([{ role: 'user', content: text }]);
  const parent = options.parent;
  return {
    response: JSON.stringify({ id: 'resp_x', text }),
    inputItems: JSON.stringify([{ id: 'msg_1', text }]),
    messages,
    parentId: parent?.id,
    depth: (parent?.turn.depth ?? 0) + 1,
    conversationBytes: (parent?.turn.conversationBytes ?? 0) + Buffer.byteLength(messages),
    bytes: options.bytes ?? 100,
  };
}

export function responseStoreContract(
  name: string,
  make: () => Promise<ResponseStoreHarness>,
  options: { skip?: string | undefined } = {},
): void {
  describe(`response store contract: ${name}`, { skip: options.skip }, () => {
    let harness: ResponseStoreHarness | undefined;
    const store = (): ResponseStore => {
      assert.ok(harness);
      return harness.responses;
    };
    before(async () => {
      harness = await make();
    });
    after(async () => {
      await harness?.close();
    });

    /** Writes a chain of `texts` for `who` at `now`, each turn continuing the one before; returns ids and turns. */
    async function chain(
      who: string,
      texts: string[],
      now = T0,
      bounds = UNBOUNDED,
    ): Promise<Array<{ id: string; turn: StoredConversationTurn }>> {
      const written: Array<{ id: string; turn: StoredConversationTurn }> = [];
      for (const text of texts) {
        const parent = written.at(-1);
        const next = { id: id(), turn: turn(text, parent ? { parent } : {}) };
        await store().put(who, next.id, next.turn, bounds, now);
        written.push(next);
      }
      return written;
    }

    test('a stored turn reads back byte for byte for its caller; an unknown id is undefined', async () => {
      const r = id();
      await store().put('admin', r, turn('héllo 👋'), UNBOUNDED, T0);
      assert.deepEqual(await store().get('admin', r, T0 + 1), turn('héllo 👋'));
      assert.equal(await store().get('admin', id(), T0 + 1), undefined);
      assert.equal(await store().conversation('admin', id(), { maxTurns: 10, maxBytes: 1e9 }, T0), undefined);
    });

    test('callers are apart: another caller, even one whose name shares a prefix, neither reads, continues nor deletes it', async () => {
      const r = id();
      await store().put('key:ab', r, turn('mine'), UNBOUNDED, T0);
      assert.equal(await store().get('key:a', r, T0), undefined);
      assert.equal(await store().get('key:abc', r, T0), undefined);
      assert.equal(await store().conversation('key:a', r, { maxTurns: 10, maxBytes: 1e9 }, T0), undefined);
      assert.equal(await store().delete('key:a', r, T0), false);
      assert.deepEqual(await store().get('key:ab', r, T0), turn('mine'));
    });

    test('it expires after its ttl (on the caller-given clock); an expired one cannot be deleted', async () => {
      const r = id();
      await store().put('admin', r, turn('short'), { ...UNBOUNDED, ttlMs: 1_000 }, T0);
      assert.ok(await store().get('admin', r, T0 + 999));
      assert.equal(await store().get('admin', r, T0 + 1_000), undefined);
      assert.equal(await store().delete('admin', r, T0 + 1_000), false);
    });

    test('delete removes it once: true, then false; writing the same id again replaces it (counted once)', async () => {
      const who = caller();
      const r = id();
      await store().put(who, r, turn('one', { bytes: 300 }), UNBOUNDED, T0);
      await store().put(who, r, turn('two', { bytes: 200 }), UNBOUNDED, T0);
      assert.deepEqual(await store().get(who, r, T0), turn('two', { bytes: 200 }));
      assert.deepEqual(await store().usage(who), { turns: 1, bytes: 200 });
      assert.equal(await store().delete(who, r, T0), true);
      assert.equal(await store().delete(who, r, T0), false);
      assert.equal(await store().get(who, r, T0), undefined);
      assert.deepEqual(await store().usage(who), { turns: 0, bytes: 0 });
    });

    test('many puts at once (one burst) are each stored and each readable', async () => {
      const ids = Array.from({ length: 41 }, () => id());
      await Promise.all(ids.map((r, i) => store().put(`caller-${i % 3}`, r, turn(`n${i}`), UNBOUNDED, T0)));
      const read = await Promise.all(ids.map((r, i) => store().get(`caller-${i % 3}`, r, T0)));
      assert.deepEqual(
        read,
        ids.map((_, i) => turn(`n${i}`)),
      );
    });

    test('bad arguments are rejections, not synchronous throws', async () => {
      await assert.rejects(store().put('admin', id(), turn('x'), { ...UNBOUNDED, ttlMs: -1 }, T0));
      await assert.rejects(store().get('admin', id(), Number.NaN));
      await assert.rejects(store().conversation('admin', id(), { maxTurns: 1, maxBytes: 1 }, Number.NaN));
    });

    test('a conversation reads back as its chain of turns, first turn first, each stored once', async () => {
      const who = caller();
      const turns = await chain(who, ['one', 'two', 'three', 'four']);
      const read = await store().conversation(who, turns[3]!.id, { maxTurns: 10, maxBytes: 1e9 }, T0);
      const last = turns[3]!.turn;
      assert.deepEqual(read, {
        head: { depth: 4, conversationBytes: last.conversationBytes },
        turns: turns.map((t) => t.turn),
      });
      // Storage is linear in the conversation: every turn counted once, whatever continues it.
      assert.deepEqual(await store().usage(who), { turns: 4, bytes: 400 });
      // From a middle turn: the chain up to it.
      const middle = await store().conversation(who, turns[1]!.id, { maxTurns: 10, maxBytes: 1e9 }, T0);
      assert.deepEqual(middle?.turns, [turns[0]!.turn, turns[1]!.turn]);
    });

    test('a conversation past its bounds gives its head alone: no turn is read', async () => {
      const who = caller();
      const turns = await chain(who, ['one', 'two', 'three']);
      const head = { depth: 3, conversationBytes: turns[2]!.turn.conversationBytes };
      assert.deepEqual(await store().conversation(who, turns[2]!.id, { maxTurns: 2, maxBytes: 1e9 }, T0), {
        head,
        turns: undefined,
      });
      assert.deepEqual(
        await store().conversation(who, turns[2]!.id, { maxTurns: 3, maxBytes: head.conversationBytes - 1 }, T0),
        { head, turns: undefined },
      );
      assert.equal(
        (await store().conversation(who, turns[2]!.id, { maxTurns: 3, maxBytes: head.conversationBytes }, T0))?.turns
          ?.length,
        3,
      );
    });

    test('continuing a conversation keeps its earlier turns alive as long as the latest', async () => {
      const who = caller();
      const first = { id: id(), turn: turn('first') };
      await store().put(who, first.id, first.turn, { ...UNBOUNDED, ttlMs: 1_000 }, T0);
      const second = { id: id(), turn: turn('second', { parent: first }) };
      await store().put(who, second.id, second.turn, { ...UNBOUNDED, ttlMs: 1_000 }, T0 + 900);
      assert.ok(await store().get(who, first.id, T0 + 1_500), 'the first turn outlives its own ttl');
      const read = await store().conversation(who, second.id, { maxTurns: 10, maxBytes: 1e9 }, T0 + 1_899);
      assert.deepEqual(read?.turns, [first.turn, second.turn]);
      assert.equal(await store().get(who, first.id, T0 + 1_900), undefined);
      assert.equal(await store().conversation(who, second.id, { maxTurns: 10, maxBytes: 1e9 }, T0 + 1_900), undefined);
    });

    test('deleting a middle turn leaves the later one, whose conversation then stops at the gap', async () => {
      const who = caller();
      const [a, b, c] = await chain(who, ['a', 'b', 'c']);
      assert.equal(await store().delete(who, b!.id, T0), true);
      assert.deepEqual(await store().get(who, c!.id, T0), c!.turn);
      const read = await store().conversation(who, c!.id, { maxTurns: 10, maxBytes: 1e9 }, T0);
      assert.deepEqual(read?.turns, [c!.turn], 'only the turn itself: its parentId names the turn that is gone');
      assert.equal(read?.turns?.[0]?.parentId, b!.id);
      assert.deepEqual((await store().conversation(who, a!.id, { maxTurns: 10, maxBytes: 1e9 }, T0))?.turns, [a!.turn]);
      assert.deepEqual(await store().usage(who), { turns: 2, bytes: 200 });
    });

    test('over its bound a caller loses its least recently continued turns, a later turn before the one it continues', async () => {
      const who = caller();
      const bystander = caller();
      await store().put(bystander, id(), turn('not mine', { bytes: 1_000 }), UNBOUNDED, T0);
      const [p1, p2] = await chain(who, ['p1', 'p2'], T0);
      const q1 = await chain(who, ['q1'], T0 + 10);
      const p3 = { id: id(), turn: turn('p3', { parent: p2! }) };
      await store().put(who, p3.id, p3.turn, UNBOUNDED, T0 + 20); // p1 and p2 now live as long as p3
      const r1 = { id: id(), turn: turn('r1') };
      const evicted = await store().put(who, r1.id, r1.turn, { ttlMs: MINUTE, maxCallerBytes: 350 }, T0 + 30);
      // 500 bytes: q1 (continued least recently) goes, then p3 before the p2 and p1 it continues.
      assert.equal(evicted, 2);
      assert.equal(await store().get(who, q1[0]!.id, T0 + 30), undefined);
      assert.equal(await store().get(who, p3.id, T0 + 30), undefined);
      assert.deepEqual((await store().conversation(who, p2!.id, { maxTurns: 10, maxBytes: 1e9 }, T0 + 30))?.turns, [
        p1!.turn,
        p2!.turn,
      ]);
      assert.ok(await store().get(who, r1.id, T0 + 30));
      assert.deepEqual(await store().usage(who), { turns: 3, bytes: 300 });
      assert.deepEqual(
        await store().usage(bystander),
        { turns: 1, bytes: 1_000 },
        "another caller's turns are not evicted",
      );
    });

    test('the chain a put just wrote is never evicted, even past the bound', async () => {
      const who = caller();
      const bounds = { ttlMs: MINUTE, maxCallerBytes: 150 };
      const [s1, s2] = await chain(who, ['s1', 's2'], T0, bounds);
      assert.deepEqual((await store().conversation(who, s2!.id, { maxTurns: 10, maxBytes: 1e9 }, T0))?.turns, [
        s1!.turn,
        s2!.turn,
      ]);
      assert.deepEqual(await store().usage(who), { turns: 2, bytes: 200 });
      // The next put of this caller, later, makes room by evicting them, the later turn first.
      const [s3] = await chain(who, ['s3'], T0 + 1, bounds);
      assert.equal(await store().get(who, s2!.id, T0 + 1), undefined);
      assert.equal(await store().get(who, s1!.id, T0 + 1), undefined);
      assert.ok(await store().get(who, s3!.id, T0 + 1));
    });
  });
}
