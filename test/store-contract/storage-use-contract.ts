/**
 * The contract of the stored bytes ledger (store/storage-use.ts) with the file and upload stores whose rows it
 * counts: every backend (SQLite migration 24, PostgreSQL postgres-storage-use.ts) passes it (issue 41).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  UploadBytesExceeded,
  type FileStore,
  type StoredUpload,
  type UploadStore,
} from '../../src/store/file-contract.js';
import type { StorageLimits, StorageUseStore } from '../../src/store/storage-use.js';

export interface StorageUseHarness {
  files: FileStore;
  uploads: UploadStore;
  storage: StorageUseStore;
  /** A second handle on the same data (another process or instance), for the races. */
  other: { uploads: UploadStore; storage: StorageUseStore };
  close(): Promise<void>;
}

const T0 = 1_700_000_000_000;
const LATER = T0 + 3_600_000;
const unique = (prefix: string) => `${prefix}${randomUUID().replaceAll('-', '').slice(0, 24)}`;

async function* bytesOf(size: number): AsyncGenerator<Uint8Array> {
  yield Buffer.alloc(size, 120);
}

function newUpload(owner: string, bytes: number): StoredUpload {
  return {
    id: unique('upload_'),
    owner,
    filename: 'x',
    purpose: 'batch',
    bytes,
    mimeType: 'text/plain',
    createdMs: T0,
    expiresMs: LATER,
    fileTtlMs: null,
    status: 'pending',
    fileId: null,
    presignNonce: null,
    presignUsed: false,
  };
}

export function storageUseContract(
  name: string,
  make: () => Promise<StorageUseHarness>,
  options: { skip?: string | undefined } = {},
): void {
  describe(`storage use contract: ${name}`, { skip: options.skip }, () => {
    let h: StorageUseHarness;
    before(async () => {
      h = await make();
    });
    after(async () => {
      await h?.close();
    });

    const putFile = (owner: string, size: number, fileId = unique('file-'), expiresMs = LATER) =>
      h.files.put(fileId, bytesOf(size), 1_000_000, () => ({
        id: fileId,
        owner,
        purpose: 'batch',
        filename: 'f',
        mimeType: null,
        createdMs: T0,
        expiresMs,
      }));

    test("a file's bytes count for its owner and in all from its insert to its delete or expiry sweep", async () => {
      const alice = unique('alice-');
      const bob = unique('bob-');
      const before = (await h.storage.use(alice)).total;
      const a = await putFile(alice, 300);
      await putFile(alice, 200, undefined, T0 + 10);
      await putFile(bob, 50);
      assert.deepEqual(await h.storage.use(alice), { owner: 500, total: before + 550 });
      assert.equal((await h.storage.use(bob)).owner, 50);
      assert.equal(await h.files.delete(alice, a.id, T0), true);
      assert.deepEqual(await h.storage.use(alice), { owner: 200, total: before + 250 });
      assert.ok((await h.files.sweep(T0 + 10, 1000)) >= 1);
      assert.deepEqual(await h.storage.use(alice), { owner: 0, total: before + 50 });
      assert.deepEqual(await h.storage.use(unique('nobody-')), { owner: 0, total: before + 50 });
    });

    test("a part's bytes count for its upload's owner until the parts are dropped or the upload is swept", async () => {
      const carol = unique('carol-');
      const upload = newUpload(carol, 1000);
      await h.uploads.create(upload);
      const bounds = { maxBytes: 1000, maxParts: 10 };
      await h.uploads.putPart(upload.id, unique('part_'), bytesOf(100), bounds, T0);
      await h.uploads.putPart(upload.id, unique('part_'), bytesOf(150), bounds, T0);
      assert.equal((await h.storage.use(carol)).owner, 250);
      await h.uploads.dropParts(upload.id);
      assert.equal((await h.storage.use(carol)).owner, 0);
      const expiring = { ...newUpload(carol, 1000), expiresMs: T0 + 5 };
      await h.uploads.create(expiring);
      await h.uploads.putPart(expiring.id, unique('part_'), bytesOf(70), bounds, T0);
      assert.equal((await h.storage.use(carol)).owner, 70);
      assert.ok((await h.uploads.sweep(T0 + 5, 1000)) >= 1);
      assert.equal((await h.storage.use(carol)).owner, 0);
    });

    test('a reservation counts until released, is refused past either limit with the figures, and grows by difference', async () => {
      const dave = unique('dave-');
      const total = (await h.storage.use(dave)).total;
      const limits: StorageLimits = { perOwner: 1000, total: total + 1500 };
      await putFile(dave, 400);
      assert.deepEqual(await h.storage.reserve(unique('file-'), dave, 600, LATER, limits), { reserved: true });
      const id = unique('file-');
      assert.deepEqual(await h.storage.reserve(id, dave, 1, LATER, limits), {
        reserved: false,
        limit: 'owner',
        usedBytes: 1000,
        limitBytes: 1000,
      });
      const erin = unique('erin-');
      assert.deepEqual(await h.storage.reserve(id, erin, 100, LATER, limits), { reserved: true });
      // Raising its own reservation checks only the difference: erin holds 100, everyone total + 1100.
      assert.deepEqual(await h.storage.reserve(id, erin, 500, LATER, limits), { reserved: true });
      assert.deepEqual(await h.storage.use(erin), { owner: 500, total: total + 1500 });
      assert.deepEqual(await h.storage.reserve(id, erin, 501, LATER, limits), {
        reserved: false,
        limit: 'total',
        usedBytes: total + 1000, // besides its own 500
        limitBytes: total + 1500,
      });
      assert.deepEqual(await h.storage.reserve(id, erin, 300, LATER, limits), { reserved: true }, 'smaller: renewed');
      assert.equal((await h.storage.use(erin)).owner, 500, 'a reservation never shrinks');
      assert.deepEqual(await h.storage.reserve(unique('file-'), erin, 10_000, LATER), { reserved: true }, 'unchecked');
      assert.equal((await h.storage.use(erin)).owner, 10_500);
      await h.storage.release(id);
      await h.storage.release(id);
      assert.equal((await h.storage.use(erin)).owner, 10_000);
    });

    test("a file's or a part's insert ends the reservation made under its id: its bytes move, never count twice", async () => {
      const frank = unique('frank-');
      const fileId = unique('file-');
      await h.storage.reserve(fileId, frank, 1000, LATER);
      assert.equal((await h.storage.use(frank)).owner, 1000);
      await putFile(frank, 640, fileId);
      assert.equal((await h.storage.use(frank)).owner, 640);
      await h.storage.release(fileId);
      assert.equal((await h.storage.use(frank)).owner, 640, 'releasing after the insert changes nothing');
      const upload = newUpload(frank, 1000);
      await h.uploads.create(upload);
      const partId = unique('part_');
      await h.storage.reserve(partId, frank, 900, LATER);
      await h.uploads.putPart(upload.id, partId, bytesOf(30), { maxBytes: 1000, maxParts: 10 }, T0);
      assert.equal((await h.storage.use(frank)).owner, 670);
    });

    test('the sweep ends only reservations past their expiry', async () => {
      const gina = unique('gina-');
      await h.storage.reserve(unique('file-'), gina, 10, T0 + 1);
      await h.storage.reserve(unique('file-'), gina, 20, T0 + 100);
      const renewed = unique('file-');
      await h.storage.reserve(renewed, gina, 40, T0 + 1);
      await h.storage.reserve(renewed, gina, 40, T0 + 100);
      assert.ok((await h.storage.sweep(T0 + 50, 1000)) >= 1);
      assert.equal((await h.storage.use(gina)).owner, 60);
      assert.ok((await h.storage.sweep(T0 + 100, 1000)) >= 2);
      assert.equal((await h.storage.use(gina)).owner, 0);
    });

    test('40 reservations raced from two handles against room for 10: exactly 10 are taken', async () => {
      const hank = unique('hank-');
      const limits = { perOwner: 1000, total: Number.MAX_SAFE_INTEGER };
      const outcomes = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          (i % 2 === 0 ? h.storage : h.other.storage).reserve(unique('file-'), hank, 100, LATER, limits),
        ),
      );
      assert.equal(outcomes.filter((o) => o.reserved).length, 10);
      assert.equal((await h.storage.use(hank)).owner, 1000);
    });

    test("12 parts raced from two handles to an upload declared as one part's size: one is recorded, the rest refused and gone", async () => {
      const ivy = unique('ivy-');
      const upload = newUpload(ivy, 1000);
      await h.uploads.create(upload);
      const bounds = { maxBytes: 1000, maxParts: 100, maxHeldBytes: 1000 };
      const results = await Promise.allSettled(
        Array.from({ length: 12 }, (_, i) =>
          (i % 2 === 0 ? h.uploads : h.other.uploads).putPart(upload.id, unique('part_'), bytesOf(1000), bounds, T0),
        ),
      );
      assert.equal(results.filter((r) => r.status === 'fulfilled' && r.value).length, 1);
      const refused = results.filter((r) => r.status === 'rejected');
      assert.equal(refused.length, 11);
      for (const r of refused) assert.ok((r as PromiseRejectedResult).reason instanceof UploadBytesExceeded);
      assert.equal((await h.uploads.parts(upload.id)).length, 1);
      assert.equal((await h.storage.use(ivy)).owner, 1000);
      // Parts that add up to the declared bytes are all recorded; one byte more is not.
      const exact = newUpload(ivy, 300);
      await h.uploads.create(exact);
      for (const size of [100, 150, 50])
        assert.ok(await h.uploads.putPart(exact.id, unique('part_'), bytesOf(size), { ...bounds, maxHeldBytes: 300 }));
      await assert.rejects(
        h.uploads.putPart(exact.id, unique('part_'), bytesOf(1), { ...bounds, maxHeldBytes: 300 }),
        (error: unknown) => error instanceof UploadBytesExceeded && error.heldBytes === 300 && error.partBytes === 1,
      );
    });
  });
}
