/**
 * Deleting a gateway file that a request forwarded to an OpenAI upstream's Files API (docs/files.md, "Files in
 * requests: forwarded to the upstream"): the caller's delete answers at once, and the copy the gateway uploaded
 * with its own key is deleted upstream in the background (`DELETE /files/{upstream id}`); a copy uploaded with the
 * caller's own X-Upstream-Key is only forgotten. An upstream that fails, answers garbage or hangs on that delete
 * never delays the caller's answer nor harms the gateway.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { startOpenAiUpstream, type OpenAiUpstream, type RecordedRequest } from '../../helpers/upstreams/openai.js';
import { waitFor } from '../../helpers/wait.js';

const OPENAI_KEY = 'sk-upstream-openai-key-del-4321';
const CALLER_KEY = 'sk-callers-own-key-del-9876';

describe('deleting a gateway file deletes its upstream copies', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  let admin: OpenAI;

  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({
      env: { OAI_KEY: OPENAI_KEY },
      configFile: {
        name: 'forwarding-delete.yaml',
        text: [
          'upstreams:',
          `  - { name: oai, kind: openai, base_url: "${mock.baseUrl}", api_key_env: OAI_KEY, health_check: none,`,
          '      timeouts: { first_byte_ms: 3000 } }',
          'models:',
          '  - { id: mini, upstream: oai, upstream_model: gpt-4o-mini }',
        ].join('\n'),
      },
    });
    admin = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  const chatNaming = (fileId: string, upstreamKey?: string) =>
    call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(upstreamKey === undefined ? {} : { 'x-upstream-key': upstreamKey }),
      body: JSON.stringify({
        model: 'mini',
        messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: fileId } }] }],
      }),
    });
  /** A new gateway file, named in one chat request: the mock took its upload; its id there. */
  const forwarded = async (name: string, upstreamKey?: string) => {
    const file = await admin.files.create({
      file: await toFile(Buffer.from(`%PDF-1.7\n${name}`), name),
      purpose: 'user_data',
    });
    const before = mock.uploadedFiles.length;
    assert.equal((await chatNaming(file.id, upstreamKey)).status, 200);
    assert.equal(mock.uploadedFiles.length, before + 1, 'the mock received the upload');
    return { id: file.id, upstreamId: mock.uploadedFiles[before]!.id };
  };
  const deleteFile = (id: string) => call(`${gw.url}/v1/files/${id}`, { method: 'DELETE', headers: authHeaders() });
  const deletesOf = (upstreamId: string): RecordedRequest[] =>
    mock.requests.filter((r) => r.method === 'DELETE' && r.path === `/v1/files/${upstreamId}`);
  const metric = async (outcome: string) => {
    const text = (await call(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text;
    const line = text.split('\n').find((l) => l.startsWith(`llmgw_upstream_file_deletes_total{outcome="${outcome}"}`));
    return line === undefined ? undefined : Number(line.split(' ').pop());
  };

  test("the delete answers 200 deleted: true and the upstream's copy is deleted with the gateway's key; the file is gone for later requests", async () => {
    mock.reset();
    const { id, upstreamId } = await forwarded('gone.pdf');
    const deletedBefore = (await metric('deleted')) ?? 0;

    const answer = await deleteFile(id);
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json, { id, object: 'file', deleted: true });
    await waitFor('the upstream received DELETE /files/<its id>', () => mock.deletedFiles.includes(upstreamId));
    const [sent] = deletesOf(upstreamId);
    assert.equal(sent?.headers.authorization, `Bearer ${OPENAI_KEY}`, "the upstream's own key");
    assert.ok(!JSON.stringify(sent?.headers).includes(ADMIN_TOKEN), 'the admin token never goes upstream');
    await waitFor('counted as deleted', async () => (await metric('deleted')) === deletedBefore + 1);

    // A request naming it now: 404, and nothing goes upstream again (no new upload).
    const requestsBefore = mock.requests.length;
    const again = await chatNaming(id);
    assert.equal(again.status, 404);
    assert.equal((again.json as { error: { code: string } }).error.code, 'file_not_found');
    assert.equal(mock.uploadedFiles.length, 1, 'no new upload');
    assert.equal(mock.requests.length, requestsBefore, 'nothing reached the upstream');
    // A second delete of the same file is the usual 404, and sends nothing upstream either.
    assert.equal((await deleteFile(id)).status, 404);
    assert.equal(deletesOf(upstreamId).length, 1);
  });

  test("a copy uploaded with the caller's own X-Upstream-Key is forgotten, never deleted with the gateway's key", async () => {
    mock.reset();
    const { id, upstreamId } = await forwarded('keyed.pdf', CALLER_KEY);
    const mine = await chatNaming(id);
    assert.equal(mine.status, 200);
    const ownUpload = mock.uploadedFiles[1]!.id;
    const leftBefore = (await metric('left')) ?? 0;

    assert.equal((await deleteFile(id)).status, 200);
    await waitFor('the gateway-key copy deleted', () => mock.deletedFiles.includes(ownUpload));
    await waitFor('the keyed copy counted as left', async () => (await metric('left')) === leftBefore + 1);
    assert.equal(deletesOf(upstreamId).length, 0, "the caller's copy is left to its upstream ttl");
    const deletes = mock.requests.filter((r) => r.method === 'DELETE');
    assert.deepEqual(
      deletes.map((r) => [r.path, r.headers.authorization]),
      [[`/v1/files/${ownUpload}`, `Bearer ${OPENAI_KEY}`]],
    );
  });

  test('a file deleted while a request was uploading it: that copy is deleted upstream once the upload ends', async () => {
    mock.reset();
    const file = await admin.files.create({
      file: await toFile(Buffer.from('%PDF-1.7\nrace'), 'race.pdf'),
      purpose: 'user_data',
    });
    const release = mock.holdFileUploads();
    const chat = chatNaming(file.id);
    await waitFor('the upload reached the upstream', () =>
      mock.requests.some((r) => r.method === 'POST' && r.path === '/v1/files'),
    );
    assert.equal((await deleteFile(file.id)).status, 200);
    release();
    assert.equal((await chat).status, 200, 'the request that uploaded it still uses its copy');
    const upstreamId = mock.uploadedFiles[0]!.id;
    await waitFor('the late copy deleted upstream', () => mock.deletedFiles.includes(upstreamId));
  });

  for (const [what, behavior] of [
    ['answers 500', { kind: 'error', status: 500 }],
    ['answers garbage', { kind: 'raw', handler: (_req, res) => res.writeHead(200).end('not json {') }],
    ['hangs', { kind: 'hang' }],
  ] as const satisfies ReadonlyArray<readonly [string, OpenAiUpstream['fileDeleteBehavior']]>) {
    test(`an upstream that ${what} on the delete does not delay the caller's answer nor harm the gateway`, async () => {
      mock.reset();
      const { id, upstreamId } = await forwarded(`${what.replace(' ', '-')}.pdf`);
      mock.fileDeleteBehavior = behavior;
      const failedBefore = (await metric('failed')) ?? 0;

      const started = Date.now();
      const answer = await deleteFile(id);
      const tookMs = Date.now() - started;
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.json, { id, object: 'file', deleted: true });
      await waitFor('the upstream received the delete', () => deletesOf(upstreamId).length === 1);
      // The upstream's first-byte timeout is 3 s: an answer that waited on a hanging upstream would take that.
      assert.ok(tookMs < 2500, `answered in ${tookMs} ms`);
      await waitFor('counted as failed', async () => (await metric('failed')) === failedBefore + 1);
      // Still serving, and the file is gone.
      assert.equal((await call(`${gw.url}/v1/files/${id}`, { headers: authHeaders() })).status, 404);
      const other = await forwarded(`${what.replace(' ', '-')}-after.pdf`);
      assert.ok(other.upstreamId);
    });
  }
});
