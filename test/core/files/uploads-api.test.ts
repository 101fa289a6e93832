/** OpenAI's Uploads API and presigned PUTs on the gateway (docs/files.md), through the `openai` SDK and raw sockets. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

const md5 = (bytes: Buffer) => createHash('md5').update(bytes).digest('hex');
const isError = (status: number, code: string) => (error: unknown) => {
  const e = error as { status?: number; error?: { code?: string } };
  return e.status === status && e.error?.code === code;
};

/** Sends the head and `sent` bytes of a part whose multipart body is longer, then destroys the socket. */
async function interruptedPart(port: number, uploadId: string, part: Buffer, sent: number): Promise<void> {
  const boundary = 'cutoff';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="data"; filename="blob"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const total = head.length + part.length + Buffer.byteLength(`\r\n--${boundary}--\r\n`);
  const socket = connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    `POST /v1/uploads/${uploadId}/parts HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\n` +
      `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${total}\r\n\r\n`,
  );
  socket.write(head);
  await new Promise<void>((resolve) => socket.write(part.subarray(0, sent), () => resolve()));
  socket.destroy();
}

describe('the Uploads API through the openai SDK', () => {
  let gw: TestGateway;
  let client: OpenAI;
  let otherKey: string;
  const partials = () => readdirSync(join(gw.dataDir, 'uploads')).filter((name) => name.startsWith('.partial-'));
  before(async () => {
    gw = await startGateway({
      configFile: { name: 'uploads.yaml', text: 'files:\n  max_part_bytes: 1048576\n  presign_ttl_seconds: 3\n' },
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
    const created = await call(`${gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: authHeaders(),
      disclosesKey: true,
      body: JSON.stringify({ name: 'other', models: ['*'], routes: ['files'] }),
    });
    otherKey = (created.json as { key: string }).key;
  });
  after(async () => {
    await gw.close();
  });

  test('an upload in three parts, one cut off mid-way and sent again, completes into the exact file', async () => {
    const whole = randomBytes(2_500_000);
    const pieces = [whole.subarray(0, 1_000_000), whole.subarray(1_000_000, 2_000_000), whole.subarray(2_000_000)];
    const upload = await client.uploads.create({
      filename: 'train.jsonl',
      purpose: 'batch',
      bytes: whole.length,
      mime_type: 'application/jsonl',
    });
    assert.match(upload.id, /^upload_/);
    assert.equal(upload.status, 'pending');
    const first = await client.uploads.parts.create(upload.id, { data: await toFile(pieces[0]!, 'p0') });
    assert.equal(first.object, 'upload.part');
    assert.equal(first.upload_id, upload.id);

    await interruptedPart(gw.port, upload.id, pieces[1]!, 400_000);
    const partLines = () => gw.logLines.filter((line) => line.includes(`/v1/uploads/${upload.id}/parts`)).length;
    await waitFor('the cut-off part ended (its access line)', () => partLines() >= 2);
    assert.ok(gw.logLines.some((l) => l.includes(`/v1/uploads/${upload.id}/parts`) && l.includes('"status":499')));
    await waitFor('the cut-off part removed', () => partials().length === 0);
    // Resumed: the missing part sent again, then the last one.
    const second = await client.uploads.parts.create(upload.id, { data: await toFile(pieces[1]!, 'p1') });
    const third = await client.uploads.parts.create(upload.id, { data: await toFile(pieces[2]!, 'p2') });

    await assert.rejects(
      client.uploads.complete(upload.id, { part_ids: [first.id, third.id] }),
      isError(400, 'upload_incomplete'),
    );
    await assert.rejects(
      client.uploads.complete(upload.id, { part_ids: [first.id, second.id, third.id], md5: '0'.repeat(32) }),
      isError(400, 'upload_checksum_mismatch'),
    );
    const done = await client.uploads.complete(upload.id, {
      part_ids: [first.id, second.id, third.id],
      md5: md5(whole),
    });
    assert.equal(done.status, 'completed');
    assert.equal(done.file?.bytes, whole.length);
    assert.equal(done.file?.filename, 'train.jsonl');
    const content = Buffer.from(await (await client.files.content(done.file!.id)).arrayBuffer());
    assert.ok(content.equals(whole));
    await assert.rejects(
      client.uploads.parts.create(upload.id, { data: await toFile(Buffer.from('x'), 'late') }),
      isError(409, 'upload_not_pending'),
    );
    assert.deepEqual(
      readdirSync(join(gw.dataDir, 'uploads')).filter((n) => n.startsWith(upload.id)),
      [],
      'the parts are dropped once completed',
    );
  });

  test('expires_after on an upload: its file expires exactly that long after the file is made', async () => {
    const bytes = Buffer.from('short-lived\n');
    const upload = await client.uploads.create({
      filename: 'short.jsonl',
      purpose: 'batch',
      bytes: bytes.length,
      mime_type: 'application/jsonl',
      expires_after: { anchor: 'created_at', seconds: 3600 },
    } as Parameters<typeof client.uploads.create>[0]);
    const part = await client.uploads.parts.create(upload.id, { data: await toFile(bytes, 'p0') });
    // The expiry is counted from the file's own creation (it was from a clock read a moment before, rounded on its
    // own: a second short whenever a second boundary fell between the two readings).
    const done = await client.uploads.complete(upload.id, { part_ids: [part.id] });
    const file = await client.files.retrieve(done.file!.id);
    assert.equal(file.expires_at, file.created_at + 3600, JSON.stringify(file));
  });

  test("another caller's parts, complete and cancel are 404 upload_not_found; a part past its bound is 413", async () => {
    const upload = await client.uploads.create({ filename: 'a', purpose: 'batch', bytes: 10, mime_type: 'text/plain' });
    const other = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: otherKey, maxRetries: 0 });
    await assert.rejects(
      other.uploads.parts.create(upload.id, { data: await toFile(Buffer.from('x'), 'x') }),
      isError(404, 'upload_not_found'),
    );
    await assert.rejects(other.uploads.complete(upload.id, { part_ids: [] }), isError(404, 'upload_not_found'));
    await assert.rejects(other.uploads.cancel(upload.id), isError(404, 'upload_not_found'));
    await assert.rejects(
      client.uploads.parts.create(upload.id, { data: await toFile(Buffer.alloc(11), 'big') }),
      isError(413, 'file_too_large'),
    );
    const cancelled = await client.uploads.cancel(upload.id);
    assert.equal(cancelled.status, 'cancelled');
  });

  test('a presigned PUT works once, without a key; again, with a wrong size, or after expiry it is refused', async () => {
    const bytes = randomBytes(300_000);
    const created = await call(`${gw.url}/v1/uploads`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({
        filename: 'x.bin',
        purpose: 'user_data',
        bytes: bytes.length,
        mime_type: 'application/octet-stream',
        presign: true,
      }),
    });
    assert.equal(created.status, 200, created.text);
    const presigned = created.json.presigned_url as { url: string; method: string; expires_at: number; bytes: number };
    assert.equal(presigned.method, 'PUT');
    assert.equal(presigned.bytes, bytes.length);
    assert.ok(!presigned.url.includes(ADMIN_TOKEN));
    assert.ok(!presigned.url.includes('?'));

    const wrong = await call(presigned.url, { method: 'PUT', body: bytes.subarray(1) });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.json.code, 'presigned_size_mismatch');
    const forged = await call(
      presigned.url.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
      { method: 'PUT', body: bytes },
    );
    assert.equal(forged.status, 403);
    assert.equal(forged.json.code, 'presigned_url_invalid');

    const put = await call(presigned.url, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: bytes,
    });
    assert.equal(put.status, 200, put.text);
    assert.equal(put.json.status, 'completed');
    const file = put.json.file as { id: string; bytes: number };
    assert.equal(file.bytes, bytes.length);
    const content = Buffer.from(await (await client.files.content(file.id)).arrayBuffer());
    assert.ok(content.equals(bytes));

    const again = await call(presigned.url, { method: 'PUT', body: bytes });
    assert.equal(again.status, 409);
    assert.equal(again.json.code, 'presigned_url_used');
    assert.ok(!gw.logLines.join('\n').includes(presigned.url.split('/presigned/')[1]!), 'the token is never logged');
    const putLine = gw.logLines.find(
      (line) =>
        line.includes(`/v1/uploads/${created.json.id as string}/presigned/[REDACTED]`) && line.includes('"status":200'),
    );
    assert.ok(putLine, 'the access line of the PUT, its token redacted');
    assert.match(putLine, /"caller":"admin"/);

    const late = await call(`${gw.url}/v1/uploads`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ filename: 'y', purpose: 'user_data', bytes: 3, mime_type: 'text/plain', presign: true }),
    });
    const lateUrl = late.json.presigned_url as { url: string; expires_at: number };
    await waitFor('the presigned URL expired', () => Date.now() >= lateUrl.expires_at * 1000, 10_000);
    const expired = await call(lateUrl.url, { method: 'PUT', body: 'abc' });
    assert.equal(expired.status, 403);
    assert.equal(expired.json.code, 'presigned_url_invalid');
    assert.equal(expired.json.details?.problem, 'expired');
  });
});
