/**
 * The stray-bytes sweep of the embedded file store (docs/files.md, "Storage"): what a crash leaves under
 * DATA_DIR/files and DATA_DIR/uploads with no record (a `.partial-*` file, a file's bytes, a part's bytes) is removed
 * at start-up once older than `files.stray_grace_seconds`; younger strays and every recorded file and part stay.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import {
  killAllGateways,
  logLines,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
} from '../../helpers/spawn-gateway.js';
import { waitFor } from '../../helpers/wait.js';

const TOKEN = 'file-strays-admin-token-0123456789ab';
const HOUR_S = 3600;

describe('stray bytes left by a kill -9 are swept at start-up, two workers sharing the data folder', () => {
  let mock: OpenAiUpstream;
  before(async () => {
    mock = await startOpenAiUpstream();
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
    await mock.close();
  });

  test('old strays go; fresh strays, other names and recorded files and parts stay', { timeout: 90_000 }, async () => {
    const dataDir = makeTempDir('gw-strays-');
    const env = {
      GATEWAY_ENV: 'prod',
      ADMIN_TOKEN: TOKEN,
      UPSTREAM_BASE_URL: mock.baseUrl,
      LOG_LEVEL: 'info',
    };
    let gw = await startGatewayProcess({ env, dataDir });
    let client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
    const bytes = Buffer.from(Array.from({ length: 5000 }, (_, i) => i % 251));
    const file = await client.files.create({ file: await toFile(bytes, 'kept.bin'), purpose: 'user_data' });
    const upload = await client.uploads.create({
      bytes: 6,
      filename: 'parts.txt',
      mime_type: 'text/plain',
      purpose: 'user_data',
    });
    const part = await client.uploads.parts.create(upload.id, { data: await toFile(Buffer.from('halves'), 'p0') });
    gw.signal('SIGKILL');
    await gw.waitForExit(10_000);

    // What a crash leaves, by hand: a write cut off, bytes renamed in but never recorded, a part likewise.
    const files = join(dataDir, 'files');
    const uploads = join(dataDir, 'uploads');
    mkdirSync(uploads, { recursive: true });
    const at = (dir: string, name: string) => join(dir, name);
    const old = [
      at(files, '.partial-0123456789abcdef01'),
      at(files, 'file-NoRecordAtAll000000000'),
      at(uploads, `${upload.id}.part_NoRecordAtAll00000000000`),
      at(uploads, 'upload_NoSuchUpload00000000000.part_AAAAAAAAAAAAAAAAAAAAAAAA'),
      at(uploads, '.partial-fedcba987654321000'),
    ];
    const fresh = [
      at(files, '.partial-aaaaaaaaaaaaaaaaaa'),
      at(files, 'file-FreshNoRecord000000000'),
      at(uploads, 'upload_FreshNoUpload0000000000.part_BBBBBBBBBBBBBBBBBBBBBBBB'),
    ];
    // Old but not names the store makes: a dot-file (an NFS silly-rename, an editor's) and a folder.
    const foreign = [at(files, '.nfs000000000001'), at(uploads, 'no-dot-in-this-name')];
    for (const path of [...old, ...fresh, ...foreign]) writeFileSync(path, 'stray');
    mkdirSync(at(files, 'a-folder'));
    const twoHoursAgo = Date.now() / 1000 - 2 * HOUR_S;
    // The recorded file and part are as old as the strays: their records, not their age, keep them.
    const recorded = [at(files, file.id), at(uploads, `${upload.id}.${part.id}`)];
    for (const path of [...old, ...foreign, ...recorded, at(files, 'a-folder')])
      utimesSync(path, twoHoursAgo, twoHoursAgo);

    gw = await startGatewayProcess({ env: { ...env, WORKERS: '2' }, dataDir });
    await waitFor('the old strays to be gone', () => old.every((path) => !existsSync(path)), 30_000);
    for (const path of [...fresh, ...foreign, ...recorded, at(files, 'a-folder')])
      assert.ok(existsSync(path), `${path} was removed`);

    // One line per process that removed some; each stray removed (and counted) once across both workers.
    const counted = () =>
      logLines(gw.stdout())
        .filter((line) => String(line.msg).startsWith('removed stray file bytes'))
        .reduce((sum, line) => sum + Number(line.removed), 0);
    await waitFor('the removals logged', () => counted() >= old.length, 10_000);
    assert.equal(counted(), old.length);

    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
    const content = Buffer.from(await (await client.files.content(file.id)).arrayBuffer());
    assert.ok(content.equals(bytes), 'the recorded file reads back byte for byte');
    const completed = await client.uploads.complete(upload.id, { part_ids: [part.id] });
    assert.equal(completed.status, 'completed');
    const made = await (await client.files.content(completed.file!.id)).text();
    assert.equal(made, 'halves');
    await gw.kill();
  });
});
