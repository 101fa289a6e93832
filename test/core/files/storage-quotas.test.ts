/**
 * Storage quotas over HTTP (issue 41, docs/files.md "Storage quotas"): a caller's stored bytes (files, the parts of
 * its uploads, writes in progress) are bounded by `files.quota_bytes_per_caller` and everyone's by
 * `files.quota_bytes_total`, checked before the bytes are stored; and an upload's parts never pass its declared
 * bytes, also when sent at once. Through the openai SDK and raw sockets.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import OpenAI, { toFile } from 'openai';
import { request } from 'undici';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call, type Answer } from '../../helpers/http.js';

const KB = 1000;
const MiB = 1024 * 1024;

/** A `POST /v1/files` body with one file part (`purpose` first, as a hand-written client may send it). */
function fileForm(bytes: Buffer, boundary = 'quota-boundary'): { head: Buffer; tail: Buffer; type: string } {
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.jsonl"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  return { head, tail: Buffer.from(`\r\n--${boundary}--\r\n`), type: `multipart/form-data; boundary=${boundary}` };
}

/** Sends a file of `bytes` as `token`: with Content-Length, or chunked (no length: the size is learnt as it comes). */
async function postFile(gw: TestGateway, token: string, bytes: Buffer, chunked = false): Promise<Answer> {
  const { head, tail, type } = fileForm(bytes);
  const headers = { authorization: `Bearer ${token}`, 'content-type': type };
  if (!chunked)
    return call(`${gw.url}/v1/files`, { method: 'POST', headers, body: Buffer.concat([head, bytes, tail]) });
  async function* pieces() {
    yield head;
    for (let at = 0; at < bytes.length; at += 64 * KB) yield bytes.subarray(at, at + 64 * KB);
    yield tail;
  }
  const response = await request(`${gw.url}/v1/files`, { method: 'POST', headers, body: Readable.from(pieces()) });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, text, json: JSON.parse(text) as Answer['json'] };
}

async function newKey(gw: TestGateway, name: string): Promise<string> {
  const created = await call(`${gw.url}/v1/?route=keys`, {
    method: 'POST',
    headers: authHeaders(),
    disclosesKey: true,
    body: JSON.stringify({ name, models: ['*'], routes: ['files'] }),
  });
  assert.equal(created.status, 201, created.text);
  return (created.json as { key: string }).key;
}

const namesIn = (gw: TestGateway, folder: string) => readdirSync(join(gw.dataDir, folder));
const partialsIn = (gw: TestGateway, folder: string) => namesIn(gw, folder).filter((n) => n.startsWith('.partial-'));

describe('storage quotas on files: per caller and in all', () => {
  let gw: TestGateway;
  let keyA: string;
  let keyB: string;
  let keyC: string;
  before(async () => {
    gw = await startGateway({
      configFile: {
        name: 'quotas.yaml',
        text: 'files:\n  quota_bytes_per_caller: 1048576\n  quota_bytes_total: 2621440\n',
      },
    });
    [keyA, keyB, keyC] = [await newKey(gw, 'a'), await newKey(gw, 'b'), await newKey(gw, 'c')];
  });
  after(async () => {
    await gw.close();
  });

  test("a file past the caller's room is 429 storage_quota_exceeded naming the quota; nothing of it is kept", async () => {
    const a = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: keyA, maxRetries: 0 });
    const first = await a.files.create({ file: await toFile(randomBytes(600 * KB), 'a.jsonl'), purpose: 'batch' });
    assert.equal(first.bytes, 600 * KB);

    const refused = await postFile(gw, keyA, randomBytes(600 * KB));
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.json.code, 'storage_quota_exceeded');
    assert.equal(refused.headers['x-should-retry'], 'false', 'the SDKs do not retry it');
    const details = refused.json.details!;
    assert.equal(details.quota, 'files.quota_bytes_per_caller');
    assert.equal(details.limit_bytes, MiB);
    assert.equal(details.used_bytes, 600 * KB);
    assert.ok((details.requested_bytes as number) > 600 * KB, 'the body, reserved before it is read');
    assert.equal((refused.json as { error?: { type?: string } }).error?.type, 'rate_limit_error');
    assert.deepEqual(partialsIn(gw, 'files'), []);
    assert.deepEqual(namesIn(gw, 'files'), [first.id]);
    assert.deepEqual(
      (await a.files.list()).data.map((f) => f.id),
      [first.id],
    );

    // The SDK sees the same refusal (a 429 it would retry, were it not told not to).
    await assert.rejects(
      a.files.create({ file: await toFile(randomBytes(500 * KB), 'b.jsonl'), purpose: 'batch' }),
      (error: unknown) =>
        (error as { status?: number }).status === 429 &&
        (error as { error?: { code?: string } }).error?.code === 'storage_quota_exceeded',
    );
  });

  test('one file larger than the quota itself is 413 exceeds_storage_quota, whatever is stored', async () => {
    const alone = await postFile(gw, keyB, randomBytes(MiB + 1));
    assert.equal(alone.status, 413, alone.text);
    assert.equal(alone.json.code, 'exceeds_storage_quota');
    assert.equal(alone.json.details!.quota, 'files.quota_bytes_per_caller');
    assert.equal(alone.json.details!.limit_bytes, MiB);
    assert.deepEqual(partialsIn(gw, 'files'), []);
  });

  test('a file sent without Content-Length is counted as it comes: refused mid-way past the room, kept when it fits', async () => {
    // keyA holds 600 KB of its 1 MiB: 600 KB more does not fit, and the bytes already written are removed.
    const cut = await postFile(gw, keyA, randomBytes(600 * KB), true);
    assert.equal(cut.status, 429, cut.text);
    assert.equal(cut.json.code, 'storage_quota_exceeded');
    assert.equal(cut.json.details!.used_bytes, 600 * KB);
    assert.deepEqual(partialsIn(gw, 'files'), []);
    // What the refused write had reserved was given back: 400 KB (to 1,000,000 of 1,048,576 bytes) fits exactly.
    const fits = await postFile(gw, keyA, randomBytes(400 * KB), true);
    assert.equal(fits.status, 200, fits.text);
    assert.equal(fits.json.bytes, 400 * KB);
  });

  test('past the total of every caller: 507 storage_full naming the quota, without the figures of others', async () => {
    const b = await postFile(gw, keyB, randomBytes(1000 * KB));
    assert.equal(b.status, 200, b.text);
    const admin = await postFile(gw, ADMIN_TOKEN, randomBytes(600 * KB));
    assert.equal(admin.status, 200, admin.text);
    // 2,600,000 of 2,621,440 bytes are stored: keyC has its whole quota, but not the gateway.
    const full = await postFile(gw, keyC, randomBytes(100 * KB));
    assert.equal(full.status, 507, full.text);
    assert.equal(full.json.code, 'storage_full');
    assert.deepEqual(full.json.details, { quota: 'files.quota_bytes_total', limit_bytes: 2_621_440 });
    assert.equal(full.headers['x-should-retry'], 'false');
    // A delete makes room at once.
    const deleted = await call(`${gw.url}/v1/files/${admin.json.id as string}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(deleted.status, 200);
    const now = await postFile(gw, keyC, randomBytes(100 * KB));
    assert.equal(now.status, 200, now.text);
  });

  test('40 files raced by one caller against room for 10: exactly 10 are kept, the rest 429', async () => {
    const racer = await newKey(gw, 'racer');
    // keyA 1,000,000 + keyB 1,000,000 + keyC 100,000 stored: 521,440 bytes left in all, 1 MiB for racer.
    const answers = await Promise.all(Array.from({ length: 40 }, () => postFile(gw, racer, randomBytes(50 * KB))));
    assert.equal(answers.filter((a) => a.status === 200).length, 10, answers.map((a) => a.status).join(','));
    assert.ok(answers.every((a) => a.status === 200 || a.json.code === 'storage_full'));
  });
});

describe('storage quotas on uploads: parts count, completion is not refused', () => {
  let gw: TestGateway;
  let client: OpenAI;
  before(async () => {
    gw = await startGateway({
      configFile: { name: 'quotas.yaml', text: 'files:\n  quota_bytes_per_caller: 1048576\n' },
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
  });

  const createUpload = (bytes: number) =>
    call(`${gw.url}/v1/uploads`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ filename: 'u.bin', purpose: 'batch', bytes, mime_type: 'application/octet-stream' }),
    });

  test("an upload declaring more than the quota is 413; one declaring more than the caller's room is 429 at once", async () => {
    const alone = await createUpload(MiB + 1);
    assert.equal(alone.status, 413, alone.text);
    assert.equal(alone.json.code, 'exceeds_storage_quota');
    assert.equal(alone.json.details!.requested_bytes, MiB + 1);
    const file = await postFile(gw, ADMIN_TOKEN, randomBytes(600 * KB));
    assert.equal(file.status, 200);
    const early = await createUpload(500 * KB);
    assert.equal(early.status, 429, early.text);
    assert.equal(early.json.code, 'storage_quota_exceeded');
    assert.equal(early.json.details!.used_bytes, 600 * KB);
    await client.files.delete(file.json.id as string);
  });

  test("a pending upload's parts hold the caller's room until it is cancelled; completing near the quota works", async () => {
    const whole = randomBytes(900 * KB);
    const upload = await client.uploads.create({
      filename: 'u.bin',
      purpose: 'batch',
      bytes: whole.length,
      mime_type: 'application/octet-stream',
    });
    const part = await client.uploads.parts.create(upload.id, { data: await toFile(whole, 'p0') });
    const blocked = await postFile(gw, ADMIN_TOKEN, randomBytes(200 * KB));
    assert.equal(blocked.status, 429, blocked.text);
    assert.equal(blocked.json.details!.used_bytes, 900 * KB, 'the part counts');
    // The assembled file is a copy of counted parts: it is not refused (the parts go once it is made).
    const done = await client.uploads.complete(upload.id, {
      part_ids: [part.id],
      md5: createHash('md5').update(whole).digest('hex'),
    });
    assert.equal(done.status, 'completed');
    assert.equal(done.file?.bytes, whole.length);
    const still = await postFile(gw, ADMIN_TOKEN, randomBytes(200 * KB));
    assert.equal(still.status, 429, 'the file counts now');
    assert.equal(still.json.details!.used_bytes, 900 * KB, 'and the parts no longer do');

    await client.files.delete(done.file!.id);
    const second = await client.uploads.create({
      filename: 'v.bin',
      purpose: 'batch',
      bytes: 900 * KB,
      mime_type: 'application/octet-stream',
    });
    await client.uploads.parts.create(second.id, { data: await toFile(randomBytes(800 * KB), 'p0') });
    assert.equal((await postFile(gw, ADMIN_TOKEN, randomBytes(300 * KB))).status, 429);
    await client.uploads.cancel(second.id);
    assert.equal((await postFile(gw, ADMIN_TOKEN, randomBytes(300 * KB))).status, 200, 'cancelled: room again');
  });
});

describe("an upload's declared bytes bound its parts, also sent at once", () => {
  let gw: TestGateway;
  let client: OpenAI;
  before(async () => {
    gw = await startGateway({ configFile: { name: 'race.yaml', text: 'files:\n  max_part_bytes: 1048576\n' } });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
  });

  test('twelve 1 MiB parts at once to an upload declared as 1 MiB: one is kept, eleven are 400 upload_incomplete', async () => {
    const upload = await client.uploads.create({
      filename: 'race.bin',
      purpose: 'batch',
      bytes: MiB,
      mime_type: 'application/octet-stream',
    });
    const parts = Array.from({ length: 12 }, () => randomBytes(MiB));
    const results = await Promise.allSettled(
      parts.map(async (bytes) => client.uploads.parts.create(upload.id, { data: await toFile(bytes, 'p') })),
    );
    const kept = results.filter((r) => r.status === 'fulfilled');
    assert.equal(kept.length, 1, `parts kept: ${kept.length}`);
    for (const r of results.filter((r) => r.status === 'rejected')) {
      const error = (r as PromiseRejectedResult).reason as { status?: number; error?: { code?: string } };
      assert.equal(error.status, 400, String(error));
      assert.equal(error.error?.code, 'upload_incomplete');
    }
    const onDisk = namesIn(gw, 'uploads').filter((n) => n.startsWith(upload.id));
    assert.equal(onDisk.length, 1, 'one part on disk');
    assert.deepEqual(partialsIn(gw, 'uploads'), []);
    const part = (kept[0] as PromiseFulfilledResult<{ id: string }>).value;
    const index = results.indexOf(kept[0]!);
    const done = await client.uploads.complete(upload.id, {
      part_ids: [part.id],
      md5: createHash('md5').update(parts[index]!).digest('hex'),
    });
    assert.equal(done.file?.bytes, MiB);
  });
});
