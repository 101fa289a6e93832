/**
 * Which gateway file was uploaded to which upstream (docs/files.md, "Files in requests"): one contract, run against
 * the embedded store (SQLite, migration 19) and PostgreSQL (`files.store: postgres`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ForwardedFileStore } from '../../src/store/file-contract.js';
import { SqliteForwardedFileStore } from '../../src/store/sqlite/sqlite-forwarded-files.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { postgresSkipReason } from '../helpers/services.js';
import { scratchPostgresFileStores } from '../helpers/scratch-postgres-files.js';

const T0 = 1_700_000_000_000;

function forwardedContract(
  name: string,
  open: () => Promise<{ store: ForwardedFileStore; close(): Promise<void> }>,
  options: { skip?: string | false } = {},
): void {
  describe(`forwarded files: ${name}`, { skip: options.skip ?? false }, () => {
    let store: ForwardedFileStore;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, close } = await open());
    });
    after(async () => {
      await close();
    });

    test('a mapping is found by file, content and upstream, and only while it lives', async () => {
      const fileId = `file-${randomUUID().replaceAll('-', '').slice(0, 24)}`;
      await store.record({
        fileId,
        sha256: 'aa',
        upstream: 'oai',
        upstreamFileId: 'file-up1',
        createdMs: T0,
        expiresMs: T0 + 1000,
      });
      assert.equal(await store.lookup(fileId, 'aa', 'oai', T0), 'file-up1');
      assert.equal(await store.lookup(fileId, 'bb', 'oai', T0), undefined, 'other content is another file');
      assert.equal(await store.lookup(fileId, 'aa', 'oai#key:x', T0), undefined, 'another account upstream');
      assert.equal(await store.lookup(fileId, 'aa', 'oai', T0 + 1000), undefined, 'expired');
    });

    test('recording again replaces the mapping; the sweep removes expired ones only', async () => {
      const fileId = `file-${randomUUID().replaceAll('-', '').slice(0, 24)}`;
      const entry = { fileId, sha256: 'cc', upstream: 'oai', createdMs: T0 };
      await store.record({ ...entry, upstreamFileId: 'file-old', expiresMs: T0 + 10 });
      await store.record({ ...entry, upstreamFileId: 'file-new', expiresMs: T0 + 5000 });
      assert.equal(await store.lookup(fileId, 'cc', 'oai', T0 + 100), 'file-new');
      const other = `file-${randomUUID().replaceAll('-', '').slice(0, 24)}`;
      await store.record({ ...entry, fileId: other, upstreamFileId: 'file-gone', expiresMs: T0 + 10 });
      assert.ok((await store.sweep(T0 + 100, 1000)) >= 1);
      assert.equal(await store.lookup(fileId, 'cc', 'oai', T0 + 100), 'file-new');
      assert.equal(await store.lookup(other, 'cc', 'oai', T0), undefined, 'swept');
    });

    test("removing a file's mappings removes all of them, live or expired, and returns each once", async () => {
      const fileId = `file-${randomUUID().replaceAll('-', '').slice(0, 24)}`;
      const kept = `file-${randomUUID().replaceAll('-', '').slice(0, 24)}`;
      const entries = [
        { fileId, sha256: 'dd', upstream: 'oai', upstreamFileId: 'file-a', createdMs: T0, expiresMs: T0 + 5000 },
        {
          fileId,
          sha256: 'dd',
          upstream: 'oai#key:abc',
          upstreamFileId: 'file-b',
          createdMs: T0,
          expiresMs: T0 + 5000,
        },
        { fileId, sha256: 'ee', upstream: 'other', upstreamFileId: 'file-c', createdMs: T0 + 1, expiresMs: T0 + 10 },
      ];
      for (const entry of entries) await store.record(entry);
      await store.record({ ...entries[0]!, fileId: kept, upstreamFileId: 'file-kept' });

      const removed = await store.removeFile(fileId);
      const byId = (a: { upstreamFileId: string }, b: { upstreamFileId: string }) =>
        a.upstreamFileId.localeCompare(b.upstreamFileId);
      assert.deepEqual([...removed].sort(byId), entries, 'every mapping of the file, with every field');
      assert.equal(await store.lookup(fileId, 'dd', 'oai', T0), undefined);
      assert.equal(await store.lookup(fileId, 'dd', 'oai#key:abc', T0), undefined);
      assert.deepEqual(await store.removeFile(fileId), [], 'a second removal finds nothing');
      assert.equal(await store.lookup(kept, 'dd', 'oai', T0), 'file-kept', "another file's mapping stays");
      const [again, twice] = await Promise.all([store.removeFile(kept), store.removeFile(kept)]);
      assert.equal(again.length + twice.length, 1, 'removed at once by two callers: one of them gets it');
    });
  });
}

forwardedContract('embedded (SQLite)', async () => {
  const sqlite = await openSqliteStore(':memory:');
  return { store: new SqliteForwardedFileStore(sqlite.db), close: () => sqlite.close() };
});

const skip = await postgresSkipReason();
forwardedContract(
  'PostgreSQL',
  async () => {
    const { stores, close } = await scratchPostgresFileStores();
    return { store: stores.forwarded, close };
  },
  { skip },
);
