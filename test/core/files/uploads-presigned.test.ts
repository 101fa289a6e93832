/**
 * Presigned PUTs (docs/files.md, "Presigned URLs"): one PUT of the upload's whole signed size, bounded by that size
 * and not by `files.max_part_bytes`; the token never reaches the log however its path is spelled; only the one
 * spelling of the token the gateway issued verifies.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { PresignService } from '../../../src/core/files/presign-service.js';
import { StoredFileService } from '../../../src/core/files/stored-file-service.js';
import { UploadService } from '../../../src/core/files/upload-service.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { presignKey } from '../../../src/secrets/presigned.js';
import { openFileStores } from '../../../src/store/open-file-stores.js';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

const MIB = 1024 * 1024;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

interface Presigned {
  id: string;
  url: string;
  /** The URL's path up to `/presigned/`, and the token after it. */
  base: string;
  token: string;
}

describe('presigned PUTs', () => {
  let gw: TestGateway;
  let client: OpenAI;
  before(async () => {
    gw = await startGateway({
      configFile: { name: 'presigned.yaml', text: 'files:\n  max_part_bytes: 1048576\n' },
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
  });

  async function presigned(bytes: number): Promise<Presigned> {
    const created = await call(`${gw.url}/v1/uploads`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ filename: 'x.bin', purpose: 'user_data', bytes, mime_type: 'text/plain', presign: true }),
    });
    assert.equal(created.status, 200, created.text);
    const url = (created.json.presigned_url as { url: string }).url;
    const at = url.lastIndexOf('/presigned/');
    return { id: created.json.id as string, url, base: url.slice(0, at), token: url.slice(at + '/presigned/'.length) };
  }

  test('a 2 MiB presigned PUT with a 1 MiB part bound completes, its bytes intact', async () => {
    const bytes = randomBytes(2 * MIB + 17);
    const { url } = await presigned(bytes.length);
    const put = await call(url, { method: 'PUT', body: bytes });
    assert.equal(put.status, 200, put.text);
    assert.equal(put.json.status, 'completed');
    const file = put.json.file as { id: string; bytes: number };
    assert.equal(file.bytes, bytes.length);
    const content = Buffer.from(await (await client.files.content(file.id)).arrayBuffer());
    assert.equal(content.length, bytes.length);
    assert.equal(sha256(content), sha256(bytes));
    // Parts sent the usual way are still bounded by max_part_bytes.
    const upload = await client.uploads.create({ filename: 'p', purpose: 'batch', bytes: 2 * MIB, mime_type: 'a/b' });
    const { toFile } = await import('openai');
    await assert.rejects(
      client.uploads.parts.create(upload.id, { data: await toFile(Buffer.alloc(MIB + 1), 'big') }),
      (error: unknown) => (error as { status?: number }).status === 413,
    );
  });

  test('more bytes than the signed size are refused 413, and the URL can be used again', async () => {
    const bytes = randomBytes(2 * MIB);
    const { id, url, token } = await presigned(bytes.length);
    // HTTP/1.1 cannot send more than its Content-Length: the bound is checked below HTTP, on the service itself.
    const stores = await openFileStores(gw.config, gw.store);
    const uploads = new UploadService(
      stores.uploads,
      new StoredFileService(stores.files, gw.config.files),
      gw.config.files,
    );
    const service = new PresignService(stores.uploads, uploads, presignKey(ADMIN_TOKEN), gw.config.files.presignTtlMs);
    async function* overflowing() {
      yield bytes;
      yield Buffer.from('x');
    }
    await assert.rejects(service.put(id, token, bytes.length, overflowing()), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'file_too_large');
      assert.equal(error.status, 413);
      assert.deepEqual(error.details, { field: 'body', max_bytes: bytes.length });
      return true;
    });
    const over = await call(url, {
      method: 'PUT',
      headers: { 'content-length': String(bytes.length + 1) },
      body: Buffer.concat([bytes, Buffer.from('x')]),
    });
    assert.equal(over.status, 400);
    assert.equal(over.json.code, 'presigned_size_mismatch');
    const put = await call(url, { method: 'PUT', body: bytes });
    assert.equal(put.status, 200, put.text);
    assert.equal((put.json.file as { bytes: number }).bytes, bytes.length);
  });

  test('the token is never logged, however the path spells "presigned", when the PUT works or fails', async () => {
    const bytes = Buffer.from('presigned bytes\n');
    const { id, base, token } = await presigned(bytes.length);
    const spelled = base.replace(/\/uploads\/[^/]+$/, '');
    const failures = [
      `${base}/%70resigned/${token}`, // a wrong size: refused before the token is taken
      `${base}/pre%73igned/${token.replace(/^v1\./, '%761.')}`,
      `${base}/PRESIGNED/${token}`, // no such route: 404
      `${base}/presigned%2F${token}`,
      `${spelled}/%75ploads/${id}/%2570resigned/${token}`,
      `${base}/%zz%70resigned/${token}`, // a bad escape: 400 before routing
    ];
    for (const url of failures) {
      const answer = await call(url, { method: 'PUT', body: 'wrong size' });
      assert.ok(answer.status >= 400, `${url}: ${answer.status}`);
    }
    const put = await call(`${base}/%70resigned/${token}`, { method: 'PUT', body: bytes });
    assert.equal(put.status, 200, put.text);
    const lineOf = (status: number) =>
      gw.logLines.find((line) => line.includes(`/${id}/%70resigned/`) && line.includes(`"status":${status}`));
    await waitFor('the access line of the PUT', () => lineOf(200) !== undefined);
    assert.ok(lineOf(200)?.includes(`/${id}/%70resigned/[REDACTED]"`), lineOf(200));
    assert.ok(lineOf(400)?.includes(`/${id}/%70resigned/[REDACTED]"`), lineOf(400));
    const log = gw.logLines.join('\n');
    for (const piece of [token, token.split('.').at(-1)!, token.split('.')[2]!]) {
      assert.ok(!log.includes(piece), `a piece of the token is in the log: ${piece}`);
    }
  });

  test('only the canonical spelling of a token verifies', async () => {
    const bytes = Buffer.from('canonical\n');
    const { base, token } = await presigned(bytes.length);
    const [version, expires, nonce, signature] = token.split('.') as [string, string, string, string];
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    // base64url's last character of 32 bytes holds 2 spare bits, of 16 bytes 4: flipping one decodes the same.
    const flipLast = (text: string) => text.slice(0, -1) + alphabet[alphabet.indexOf(text.at(-1)!) ^ 1];
    assert.deepEqual(Buffer.from(flipLast(signature), 'base64url'), Buffer.from(signature, 'base64url'));
    const spellings = [
      [version, `0${expires}`, nonce, signature],
      [version, `00${expires}`, nonce, signature],
      [version, expires, nonce, flipLast(signature)],
      [version, expires, flipLast(nonce), signature],
    ];
    for (const parts of spellings) {
      const answer = await call(`${base}/presigned/${parts.join('.')}`, { method: 'PUT', body: bytes });
      assert.equal(answer.status, 403, `${parts.join('.')}: ${answer.text}`);
      assert.equal(answer.json.code, 'presigned_url_invalid');
    }
    const put = await call(`${base}/presigned/${token}`, { method: 'PUT', body: bytes });
    assert.equal(put.status, 200, put.text);
  });
});
