/** OpenAI's Files API on the gateway (docs/files.md), through the official `openai` SDK and raw HTTP. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/** A multipart body written by hand (for what the SDK never sends). */
function form(parts: Array<{ name: string; value: string | Buffer; filename?: string }>, boundary = 'b0undary') {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename === undefined ? '' : `; filename="${part.filename}"`}`;
    chunks.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n\r\n`),
      Buffer.from(part.value),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
}

describe('the Files API through the openai SDK', () => {
  let gw: TestGateway;
  let admin: OpenAI;
  let other: OpenAI;
  before(async () => {
    gw = await startGateway({ configFile: { name: 'files.yaml', text: 'files:\n  max_file_bytes: 65536\n' } });
    admin = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
    const created = await call(`${gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: authHeaders(),
      disclosesKey: true,
      body: JSON.stringify({ name: 'other', models: ['*'], routes: ['files'] }),
    });
    other = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: (created.json as { key: string }).key, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
  });

  test('create, retrieve, content, list and delete a file; the bytes are on disk under DATA_DIR/files', async () => {
    const text = '{"custom_id":"1"}\n{"custom_id":"2"}\n';
    const file = await admin.files.create({ file: await toFile(Buffer.from(text), 'input.jsonl'), purpose: 'batch' });
    assert.match(file.id, /^file-[A-Za-z0-9]{24}$/);
    assert.equal(file.object, 'file');
    assert.equal(file.bytes, Buffer.byteLength(text));
    assert.equal(file.filename, 'input.jsonl');
    assert.equal(file.purpose, 'batch');
    assert.equal(file.status, 'processed');
    assert.equal((file as unknown as { sha256: string }).sha256, sha256(text));
    assert.ok(file.expires_at! > file.created_at);
    assert.ok(existsSync(join(gw.dataDir, 'files', file.id)));

    assert.deepEqual(await admin.files.retrieve(file.id), file);
    const content = await admin.files.content(file.id);
    assert.equal(await content.text(), text);
    assert.equal(content.headers.get('x-content-sha256'), sha256(text));

    const page = await admin.files.list({ purpose: 'batch' });
    assert.ok(page.data.some((f) => f.id === file.id));

    const deleted = await admin.files.delete(file.id);
    assert.deepEqual(deleted, { id: file.id, object: 'file', deleted: true });
    await assert.rejects(
      admin.files.retrieve(file.id),
      (error: unknown) => (error as { status?: number }).status === 404,
    );
    assert.ok(!existsSync(join(gw.dataDir, 'files', file.id)));
  });

  test("another caller gets 404 file_not_found for each of the owner's calls, and never sees it listed", async () => {
    const file = await admin.files.create({ file: await toFile(Buffer.from('secret'), 'a.txt'), purpose: 'user_data' });
    for (const attempt of [
      () => other.files.retrieve(file.id),
      () => other.files.content(file.id),
      () => other.files.delete(file.id),
    ]) {
      await assert.rejects(attempt(), (error: unknown) => {
        const e = error as { status?: number; error?: { code?: string } };
        return e.status === 404 && e.error?.code === 'file_not_found';
      });
    }
    assert.equal((await other.files.list()).data.length, 0);
    assert.equal((await admin.files.retrieve(file.id)).id, file.id); // still there for its owner
  });

  test('the list pages by cursor: after, limit, order, has_more, first_id and last_id', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        (await other.files.create({ file: await toFile(Buffer.from(`f${i}`), `f${i}.txt`), purpose: 'assistants' })).id,
      );
    }
    const first = await call(`${gw.url}/v1/files?limit=2&order=asc`, {
      headers: { authorization: other.apiKey ? `Bearer ${other.apiKey}` : '' },
    });
    const body = first.json as unknown as {
      data: Array<{ id: string }>;
      has_more: boolean;
      first_id: string;
      last_id: string;
    };
    assert.deepEqual(
      body.data.map((f) => f.id),
      ids.slice(0, 2),
    );
    assert.equal(body.has_more, true);
    assert.equal(body.first_id, ids[0]);
    assert.equal(body.last_id, ids[1]);
    const all: string[] = [];
    for await (const f of other.files.list({ limit: 2, order: 'asc' })) all.push(f.id);
    assert.deepEqual(all, ids);
    const desc = await other.files.list({ limit: 10, order: 'desc' });
    assert.deepEqual(
      desc.data.map((f) => f.id),
      [...ids].reverse(),
    );
  });

  test('hostile multipart bodies are 400 invalid_multipart / invalid_file_request with details, and keep nothing', async () => {
    const headers = (type: string) => ({ authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': type });
    const before = readdirSync(join(gw.dataDir, 'files')).length;
    const noBoundary = await call(`${gw.url}/v1/files`, {
      method: 'POST',
      headers: headers('multipart/form-data'),
      body: 'x',
    });
    assert.equal(noBoundary.status, 400);
    assert.equal(noBoundary.json.code, 'invalid_multipart');
    assert.equal(noBoundary.json.details?.header, 'content-type');

    const badPurpose = form([
      { name: 'file', value: 'abc', filename: 'a.txt' },
      { name: 'purpose', value: 'steal' },
    ]);
    const refused = await call(`${gw.url}/v1/files`, {
      method: 'POST',
      headers: headers(badPurpose.type),
      body: badPurpose.body,
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.json.code, 'invalid_file_request');
    assert.equal(refused.json.details?.field, 'purpose');

    const noFile = form([{ name: 'purpose', value: 'batch' }]);
    const missing = await call(`${gw.url}/v1/files`, {
      method: 'POST',
      headers: headers(noFile.type),
      body: noFile.body,
    });
    assert.equal(missing.status, 400);
    assert.equal(missing.json.code, 'invalid_multipart');

    const two = form([
      { name: 'purpose', value: 'batch' },
      { name: 'file', value: 'a', filename: 'a.txt' },
      { name: 'file', value: 'b', filename: 'b.txt' },
    ]);
    const twoFiles = await call(`${gw.url}/v1/files`, { method: 'POST', headers: headers(two.type), body: two.body });
    assert.equal(twoFiles.status, 400);
    assert.equal(twoFiles.json.code, 'invalid_multipart');

    const many = form(Array.from({ length: 40 }, (_, i) => ({ name: `f${i}`, value: 'x' })));
    const tooMany = await call(`${gw.url}/v1/files`, { method: 'POST', headers: headers(many.type), body: many.body });
    assert.equal(tooMany.status, 400);
    assert.equal(tooMany.json.details?.problem, 'too many parts');

    const big = form([
      { name: 'purpose', value: 'batch' },
      { name: 'file', value: Buffer.alloc(65537, 1), filename: 'big.bin' },
    ]);
    const tooBig = await call(`${gw.url}/v1/files`, { method: 'POST', headers: headers(big.type), body: big.body });
    assert.equal(tooBig.status, 413);
    assert.equal(tooBig.json.code, 'file_too_large');
    assert.equal(tooBig.json.details?.max_bytes, 65536);

    const expiry = form([
      { name: 'purpose', value: 'batch' },
      { name: 'expires_after[anchor]', value: 'created_at' },
      { name: 'expires_after[seconds]', value: '60' },
      { name: 'file', value: 'abc', filename: 'a.txt' },
    ]);
    const badExpiry = await call(`${gw.url}/v1/files`, {
      method: 'POST',
      headers: headers(expiry.type),
      body: expiry.body,
    });
    assert.equal(badExpiry.status, 400);
    assert.equal(badExpiry.json.details?.field, 'expires_after[seconds]');
    assert.equal(readdirSync(join(gw.dataDir, 'files')).length, before, 'nothing kept of a refused upload');
  });

  test("OpenAI's error.param names the field or query parameter our details name (the SDK's error.param)", async () => {
    await assert.rejects(
      admin.files.create({ file: await toFile(Buffer.from('x'), 'a.txt'), purpose: 'steal' as 'batch' }),
      (e: unknown) => {
        assert.ok(e instanceof OpenAI.BadRequestError, String(e));
        assert.equal(e.code, 'invalid_file_request');
        assert.equal(e.param, 'purpose');
        return true;
      },
    );
    await assert.rejects(admin.files.list({ limit: 0 }), (e: unknown) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.param, 'limit');
      return true;
    });
    await assert.rejects(
      admin.batches.create({
        input_file_id: 'file-AAAAAAAAAAAAAAAAAAAAAAAA',
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      }),
      (e: unknown) => {
        assert.ok(e instanceof OpenAI.BadRequestError, String(e));
        assert.equal(e.param, 'input_file_id');
        return true;
      },
    );
    await assert.rejects(admin.files.retrieve('file-AAAAAAAAAAAAAAAAAAAAAAAA'), (e: unknown) => {
      assert.ok(e instanceof OpenAI.NotFoundError, String(e));
      assert.equal(e.param, null, 'a 404 names no parameter');
      return true;
    });
  });

  test('a list cursor that is not an id of that list is 400 invalid_query_parameter naming it, not a page', async () => {
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    for (const [path, parameter] of [
      ['/v1/files?after=garbage', 'after'],
      ['/v1/files?after=batch_0123456789abcdef0123456789abcdef', 'after'],
      ['/v1/batches?after=garbage', 'after'],
      ['/v1/batches?after=file-AAAAAAAAAAAAAAAAAAAAAAAA', 'after'],
      ['/v1/messages/batches?after_id=garbage', 'after_id'],
      ['/v1/messages/batches?after_id=batch_0123456789abcdef0123456789abcdef', 'after_id'],
    ] as const) {
      const answer = await call(`${gw.url}${path}`, { headers: auth });
      assert.equal(answer.status, 400, path);
      assert.equal(answer.json.code, 'invalid_query_parameter', path);
      assert.equal(answer.json.details?.parameter, parameter, path);
    }
    // A well-formed id that is not (or no longer) the caller's is still answered as before (a page).
    for (const path of [
      '/v1/files?after=file-AAAAAAAAAAAAAAAAAAAAAAAA',
      '/v1/batches?after=batch_0123456789abcdef0123456789abcdef',
      '/v1/messages/batches?after_id=msgbatch_0123456789abcdef0123456789abcdef',
    ]) {
      assert.equal((await call(`${gw.url}${path}`, { headers: auth })).status, 200, path);
    }
  });

  test('a files, uploads or batches path called with another method is 405 with Allow; the 404 lists batches', async () => {
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    for (const [method, path, allow] of [
      ['PUT', '/v1/files', 'GET, HEAD, POST'],
      ['PATCH', '/v1/files/file-AAAAAAAAAAAAAAAAAAAAAAAA', 'GET, HEAD, DELETE'],
      ['POST', '/v1/files/file-AAAAAAAAAAAAAAAAAAAAAAAA/content', 'GET, HEAD'],
      ['GET', '/v1/uploads', 'POST'],
      ['GET', '/v1/uploads/upload_x/complete', 'POST'],
      ['POST', '/v1/uploads/upload_x/presigned/v1.1.a.b', 'PUT'],
      ['DELETE', '/v1/batches', 'GET, HEAD, POST'],
      ['DELETE', '/v1/batches/batch_x', 'GET, HEAD'],
      ['GET', '/v1/batches/batch_x/cancel', 'POST'],
    ] as const) {
      const answer = await call(`${gw.url}${path}`, { method, headers: auth });
      assert.equal(answer.status, 405, `${method} ${path}`);
      assert.equal(answer.json.code, 'method_not_allowed');
      assert.equal(answer.headers.allow, allow, `${method} ${path}`);
    }
    const missing = await call(`${gw.url}/v1/batch`, { headers: auth });
    assert.equal(missing.status, 404);
    assert.match(String(missing.json.message), /POST\|GET \/v1\/batches, GET \/v1\/batches\/\{id\}/);
  });

  test('a whole body whose file part never ends (no closing boundary) is 400 invalid_multipart, not a 500', async () => {
    const headers = {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      'content-type': 'multipart/form-data; boundary=b0undary',
    };
    const cut = (field: string) =>
      `--b0undary\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
      `--b0undary\r\nContent-Disposition: form-data; name="${field}"; filename="a.jsonl"\r\n\r\nabc`;
    const filesBefore = readdirSync(join(gw.dataDir, 'files')).length;
    const file = await call(`${gw.url}/v1/files`, { method: 'POST', headers, body: cut('file') });
    assert.equal(file.status, 400);
    assert.equal(file.json.code, 'invalid_multipart');
    assert.match(String(file.json.details?.problem), /end of multipart data/);
    assert.equal(readdirSync(join(gw.dataDir, 'files')).length, filesBefore, 'nothing kept of a cut file');

    const upload = await call(`${gw.url}/v1/uploads`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ filename: 'a.jsonl', purpose: 'batch', bytes: 3, mime_type: 'text/jsonl' }),
    });
    const uploadId = String((upload.json as unknown as { id: string }).id);
    const part = await call(`${gw.url}/v1/uploads/${uploadId}/parts`, { method: 'POST', headers, body: cut('data') });
    assert.equal(part.status, 400);
    assert.equal(part.json.code, 'invalid_multipart');
    assert.match(String(part.json.details?.problem), /end of multipart data/);
    assert.deepEqual(
      readdirSync(join(gw.dataDir, 'uploads')).filter((name) => name.startsWith(uploadId)),
      [],
      'no part kept',
    );
  });
});
