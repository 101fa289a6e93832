/**
 * The vector store metrics through the real gateway (docs/metrics.md): stores, files by status and bytes of every
 * caller together from the store; files ingested by outcome, chunks embedded and searches by outcome counted by this
 * process; no label names a caller. The dashboard's overview document carries the per-caller figures.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN_TOKEN } from '../helpers/gateway.js';
import { startVectorStoreUsageFixture, type VectorStoreUsageFixture } from '../helpers/vector-store-usage-fixture.js';

/** The value of the sample `name{labels}` (labels as written in the exposition), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('vector store metrics', () => {
  let f: VectorStoreUsageFixture;
  before(async () => {
    f = await startVectorStoreUsageFixture();
  });
  after(async () => {
    await f?.close();
  });

  test('/metrics: stores, files by status, bytes; ingestion and search outcomes; no caller label', async () => {
    const res = await fetch(`${f.gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.equal(sample(text, 'llmgw_vector_stores'), 3);
    assert.equal(sample(text, 'llmgw_vector_store_files{status="completed"}'), 2);
    assert.equal(sample(text, 'llmgw_vector_store_files{status="failed"}'), 1);
    assert.equal(sample(text, 'llmgw_vector_store_files{status="in_progress"}'), 0);
    assert.equal(sample(text, 'llmgw_vector_store_files{status="cancelled"}'), 0);
    assert.ok(f.admin.bytes > 0 && f.key.bytes > 0);
    assert.equal(sample(text, 'llmgw_vector_store_bytes'), f.admin.bytes + f.key.bytes);
    assert.equal(sample(text, 'llmgw_vector_store_files_ingested_total{outcome="completed"}'), 2);
    assert.equal(sample(text, 'llmgw_vector_store_files_ingested_total{outcome="failed"}'), 1);
    assert.equal(sample(text, 'llmgw_vector_store_files_ingested_total{outcome="cancelled"}'), 0);
    assert.equal(sample(text, 'llmgw_vector_store_files_ingested_total{outcome="lost"}'), 0);
    // One chunk per short file, each embedded once (the blank file failed before embedding).
    assert.equal(sample(text, 'llmgw_vector_store_chunks_embedded_total'), 2);
    assert.equal(sample(text, 'llmgw_vector_store_searches_total{outcome="ok"}'), 2);
    // A store not found by the route is refused before any search: not a search (test/core/retrieval/retrieval-stats).
    assert.equal(sample(text, 'llmgw_vector_store_searches_total{outcome="vector_store_not_found"}'), undefined);
    const vectorLines = text.split('\n').filter((l) => l.startsWith('llmgw_vector_store'));
    assert.ok(vectorLines.length >= 12);
    assert.ok(!vectorLines.some((l) => l.includes('admin') || l.includes('key:')), 'no caller in any label');
  });

  test('the dashboard overview: stores, files and bytes per caller, the most bytes first, and every caller', async () => {
    const res = await fetch(`${f.gw.url}/dashboard/api/overview`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(res.status, 200);
    const { vectorStores } = (await res.json()) as {
      vectorStores: {
        total: Record<string, number>;
        byCaller: Array<Record<string, number | string>>;
        readAt: string;
      };
    };
    const row = (u: typeof f.admin) => ({
      caller: u.caller,
      stores: u.stores,
      files: u.files,
      inProgress: 0,
      failed: u.failed,
      bytes: u.bytes,
    });
    const expected = [row(f.admin), row(f.key)].sort((a, b) => b.bytes - a.bytes);
    assert.deepEqual(vectorStores.byCaller, expected);
    assert.deepEqual(vectorStores.total, {
      stores: 3,
      files: 3,
      inProgress: 0,
      failed: 1,
      bytes: f.admin.bytes + f.key.bytes,
    });
    assert.ok(Date.parse(vectorStores.readAt) <= Date.now());
  });
});
