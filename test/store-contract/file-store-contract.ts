/** The contract every files/uploads store pair passes (embedded: SQLite + disk; PostgreSQL: chunked bytea). */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import {
  ContentTooLarge,
  type FileStore,
  type NewFile,
  type StoredUpload,
  type UploadStore,
} from '../../src/store/file-contract.js';

export interface FileStoreHarness {
  files: FileStore;
  uploads: UploadStore;
  close(): Promise<void>;
}

const T0 = 1_700_000_000_000;
const id = (prefix: string) => `${prefix}${randomUUID().replaceAll('-', '').slice(0, 24)}`;

async function* chunks(bytes: Buffer, size = 65_536): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function* cutOff(bytes: Buffer): AsyncGenerator<Uint8Array> {
  yield bytes.subarray(0, bytes.length >> 1);
  throw new Error('the caller went away');
}

async function readAll(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

function newFile(owner: string, fileId: string, extra: Partial<NewFile> = {}): NewFile {
  return {
    id: fileId,
    owner,
    purpose: 'batch',
    filename: 'a.jsonl',
    mimeType: null,
    createdMs: T0,
    expiresMs: T0 + 60_000,
    ...extra,
  };
}

function newUpload(owner: string, extra: Partial<StoredUpload> = {}): StoredUpload {
  return {
    id: id('upload_'),
    owner,
    filename: 'x',
    purpose: 'batch',
    bytes: 10,
    mimeType: 'text/plain',
    createdMs: T0,
    expiresMs: T0 + 3_600_000,
    fileTtlMs: null,
    status: 'pending',
    fileId: null,
    presignNonce: null,
    presignUsed: false,
    ...extra,
  };
}

export function fileStoreContract(
  name: string,
  make: () => Promise<FileStoreHarness>,
  options: { skip?: string | undefined } = {},
): void {
  describe(`file store contract: ${name}`, { skip: options.skip }, () => {
    let h: FileStoreHarness;
    before(async () => {
      h = await make();
    });
    after(async () => {
      await h?.close();
    });

    test('put streams bytes in (3 MB, over several chunks) and read gives them back, with size and SHA-256', async () => {
      const bytes = randomBytes(3 * 1024 * 1024 + 17);
      const fileId = id('file-');
      const stored = await h.files.put(fileId, chunks(bytes), 10 * 1024 * 1024, () => newFile('alice', fileId));
      assert.equal(stored.bytes, bytes.length);
      assert.equal(stored.sha256, createHash('sha256').update(bytes).digest('hex'));
      const read = await h.files.read('alice', fileId, T0);
      assert.ok(read);
      assert.ok((await readAll(read.stream)).equals(bytes));
      assert.deepEqual(await h.files.get('alice', fileId, T0), stored);
    });

    test('a file deleted while it is read gives its whole bytes or an error, never fewer bytes as if whole', async () => {
      // A batch's input read for storing (its second pass) must not end early and store a shorter batch.
      const bytes = randomBytes(3 * 1024 * 1024 + 17);
      const fileId = id('file-');
      await h.files.put(fileId, chunks(bytes), 10 * 1024 * 1024, () => newFile('alice', fileId));
      const read = await h.files.read('alice', fileId, T0);
      assert.ok(read);
      const got: Buffer[] = [];
      let deleted = false;
      const outcome = await (async () => {
        for await (const chunk of read.stream as AsyncIterable<Buffer>) {
          got.push(chunk);
          if (!deleted) {
            deleted = true;
            assert.equal(await h.files.delete('alice', fileId, T0), true);
          }
        }
        return 'ended';
      })().catch((error: unknown) => error);
      if (outcome === 'ended') assert.ok(Buffer.concat(got).equals(bytes), 'a stream that ends has every byte');
      else assert.ok(outcome instanceof Error, String(outcome));
    });

    test("another owner's id, an expired file and a deleted one are unknown", async () => {
      const fileId = id('file-');
      await h.files.put(fileId, chunks(Buffer.from('x')), 10, () => newFile('alice', fileId));
      assert.equal(await h.files.get('bob', fileId, T0), undefined);
      assert.equal(await h.files.read('bob', fileId, T0), undefined);
      assert.equal(await h.files.delete('bob', fileId, T0), false);
      assert.equal(await h.files.get('alice', fileId, T0 + 60_000), undefined, 'expired');
      assert.equal(await h.files.delete('alice', fileId, T0), true);
      assert.equal(await h.files.get('alice', fileId, T0), undefined);
      assert.equal(await h.files.delete('alice', fileId, T0), false);
    });

    test('a write past maxBytes, cut off, or refused by describe keeps nothing', async () => {
      const tooBig = id('file-');
      await assert.rejects(
        h.files.put(tooBig, chunks(Buffer.alloc(100)), 99, () => newFile('alice', tooBig)),
        ContentTooLarge,
      );
      const cut = id('file-');
      await assert.rejects(
        h.files.put(cut, cutOff(Buffer.alloc(100)), 1000, () => newFile('alice', cut)),
        /went away/,
      );
      const refused = id('file-');
      await assert.rejects(
        h.files.put(refused, chunks(Buffer.alloc(10)), 1000, () => {
          throw new Error('bad purpose');
        }),
        /bad purpose/,
      );
      for (const fileId of [tooBig, cut, refused]) assert.equal(await h.files.get('alice', fileId, T0), undefined);
    });

    test('list pages by (created, id) either way, filtered by purpose, and sweep removes the expired', async () => {
      const owner = `lister-${randomUUID()}`;
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const fileId = id('file-');
        ids.push(fileId);
        await h.files.put(fileId, chunks(Buffer.from(`f${i}`)), 10, () =>
          newFile(owner, fileId, {
            createdMs: T0 + i,
            purpose: i % 2 === 0 ? 'batch' : 'vision',
            expiresMs: T0 + 1000 + i,
          }),
        );
      }
      const first = await h.files.list(owner, { limit: 2, order: 'asc' }, T0);
      assert.deepEqual(
        first.files.map((f) => f.id),
        ids.slice(0, 2),
      );
      assert.equal(first.hasMore, true);
      const next = await h.files.list(owner, { limit: 10, order: 'asc', after: ids[1] }, T0);
      assert.deepEqual(
        next.files.map((f) => f.id),
        ids.slice(2),
      );
      assert.equal(next.hasMore, false);
      const desc = await h.files.list(owner, { limit: 10, order: 'desc', purpose: 'batch' }, T0);
      assert.deepEqual(
        desc.files.map((f) => f.id),
        [ids[4], ids[2], ids[0]],
      );
      assert.equal((await h.files.sweep(T0 + 1002, 100)) >= 3, true);
      assert.deepEqual(
        (await h.files.list(owner, { limit: 10, order: 'asc' }, T0)).files.map((f) => f.id),
        ids.slice(3),
      );
    });

    test('parts are kept whole or not at all, only while pending, and survive reading back in order', async () => {
      const upload = newUpload('alice');
      await h.uploads.create(upload);
      assert.deepEqual(await h.uploads.get('alice', upload.id), upload);
      assert.equal(await h.uploads.get('bob', upload.id), undefined);
      const bounds = { maxBytes: 100, maxParts: 3 };
      const a = await h.uploads.putPart(upload.id, 'part_a', chunks(Buffer.from('hello')), bounds, T0);
      await assert.rejects(h.uploads.putPart(upload.id, 'part_cut', cutOff(Buffer.alloc(50)), bounds, T0), /went away/);
      await assert.rejects(
        h.uploads.putPart(upload.id, 'part_big', chunks(Buffer.alloc(101)), bounds, T0),
        ContentTooLarge,
      );
      const b = await h.uploads.putPart(upload.id, 'part_b', chunks(Buffer.from('world')), bounds, T0);
      assert.equal(a?.bytes, 5);
      assert.deepEqual(
        (await h.uploads.parts(upload.id)).map((p) => p.id),
        ['part_a', 'part_b'],
      );
      assert.equal((await readAll(await h.uploads.readPart(upload.id, 'part_b'))).toString(), 'world');
      assert.ok(b);
      await h.uploads.putPart(upload.id, 'part_c', chunks(Buffer.from('!')), bounds, T0);
      assert.equal(
        await h.uploads.putPart(upload.id, 'part_d', chunks(Buffer.from('?')), bounds, T0),
        undefined,
        'max parts',
      );
      assert.equal(await h.uploads.transition(upload.id, 'pending', 'cancelled'), true);
      assert.equal(await h.uploads.transition(upload.id, 'pending', 'completed'), false);
      assert.equal(
        await h.uploads.putPart(upload.id, 'part_e', chunks(Buffer.from('x')), bounds, T0),
        undefined,
        'not pending',
      );
      await h.uploads.dropParts(upload.id);
      assert.deepEqual(await h.uploads.parts(upload.id), []);
    });

    test('a presign nonce is taken once, given back, replaced; sweep removes expired uploads', async () => {
      const upload = newUpload('alice');
      await h.uploads.create(upload);
      assert.equal(await h.uploads.setPresign(upload.id, 'n1'), true);
      assert.equal(await h.uploads.takePresign(upload.id, 'n1'), true);
      assert.equal(await h.uploads.takePresign(upload.id, 'n1'), false);
      await h.uploads.releasePresign(upload.id, 'n1');
      assert.equal(await h.uploads.takePresign(upload.id, 'n1'), true);
      assert.equal(await h.uploads.setPresign(upload.id, 'n2'), true);
      assert.equal(await h.uploads.takePresign(upload.id, 'n1'), false);
      assert.equal((await h.uploads.byId(upload.id))?.presignNonce, 'n2');
      await h.uploads.putPart(upload.id, 'part_a', chunks(Buffer.from('x')), { maxBytes: 10, maxParts: 10 }, T0);
      assert.ok((await h.uploads.sweep(upload.expiresMs, 1000)) >= 1);
      assert.equal(await h.uploads.byId(upload.id), undefined);
    });
  });
}
