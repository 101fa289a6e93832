/**
 * An answer the gateway sends before it has read a request's body (a part for a completed upload, another caller's
 * upload, a caller without the `files` right) reaches the client as that answer, never as a network error: the
 * rest of the body is read and thrown away, within a bound, before the connection closes (http/lingering-close.ts).
 * The gateway runs as its own process: with the client on the same event loop the race never shows, while across
 * two processes a closed connection made most of these calls `Connection error` (write EPIPE) on Node 24 and 26.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { LINGER_MAX_BYTES, LINGER_MAX_MS } from '../../../src/http/lingering-close.js';
import {
  bearer,
  httpCall,
  jsonOf,
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
} from '../../helpers/spawn-gateway.js';
import { waitFor } from '../../helpers/wait.js';

const ADMIN = 'early-refusal-admin-token-0123456789';
const MB = 1024 * 1024;
const TIMEOUT = { timeout: 60_000 };

/** Asserts the SDK saw this HTTP error (its message says what it saw instead, e.g. `Connection error.`). */
const sawError = (status: number, code?: string) => (error: unknown) => {
  const e = error as { status?: number; error?: { code?: string }; message?: string; cause?: { message?: string } };
  const saw = `${String(e.message)} ${String(e.cause?.message ?? '')}`;
  assert.equal(e.status, status, `expected the SDK to see ${status}, it saw: ${saw}`);
  if (code !== undefined) assert.equal(e.error?.code, code);
  return true;
};

/** A socket that has sent the head of a multipart part of `declared` bytes to `path`, and its answer as it arrives. */
async function partHead(port: number, path: string, declared: number) {
  // Half-open allowed: this caller goes on sending after the gateway's FIN, as a hostile one would.
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const boundary = 'linger';
  const preamble =
    `--${boundary}\r\nContent-Disposition: form-data; name="data"; filename="blob"\r\n` +
    'Content-Type: application/octet-stream\r\n\r\n';
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN}\r\n` +
      `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${declared}\r\n\r\n${preamble}`,
  );
  // The first bytes of the file: the gateway looks at the upload once the form's file part has started.
  const first = Buffer.alloc(64 * 1024);
  socket.write(first);
  return {
    socket,
    closed,
    answer: () => received,
    bodySent: preamble.length + first.length,
    sent: `Content-Length: ${declared}`,
  };
}

/** A socket that has sent `requestLine` and the head of a body of `declared` bytes, none of the body yet. */
async function rawHead(port: number, requestLine: string, declared: number) {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const sent = `${requestLine}\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`;
  socket.write(sent);
  return { socket, closed, answer: () => received, bodySent: 0, sent };
}

/** Writes zeros as fast as the peer takes them until the socket fails or closes; the bytes it accepted. */
async function writeUntilClosed(socket: Socket): Promise<number> {
  const chunk = Buffer.alloc(256 * 1024);
  let written = 0;
  while (!socket.destroyed && socket.writable) {
    const ok = await new Promise<boolean>((resolve) => socket.write(chunk, (error) => resolve(!error)));
    if (!ok) break;
    written += chunk.length;
  }
  return written;
}

describe('an early refusal of a request with a body, from the gateway process', () => {
  let gw: GatewayProcess;
  let client: OpenAI;
  let completedId: string;
  let otherKey: string;
  let noFilesKey: string;
  before(async () => {
    const config = join(makeTempDir(), 'files.yaml');
    writeFileSync(config, 'files:\n  max_part_bytes: 1048576\n');
    gw = await startGatewayProcess({
      env: {
        GATEWAY_ENV: 'dev',
        ADMIN_TOKEN: ADMIN,
        LOG_LEVEL: 'warn',
        BODY_LIMIT_BYTES: '65536',
        GATEWAY_CONFIG: config,
      },
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN, maxRetries: 0 });
    const upload = await client.uploads.create({ filename: 'a', purpose: 'batch', bytes: 3, mime_type: 'text/plain' });
    const part = await client.uploads.parts.create(upload.id, { data: await toFile(Buffer.from('abc'), 'p') });
    await client.uploads.complete(upload.id, { part_ids: [part.id] });
    completedId = upload.id;
    const keyOf = async (name: string, routes: string[]) => {
      const created = await httpCall(`${gw.url}/v1/?route=keys`, {
        method: 'POST',
        headers: bearer(ADMIN, { 'content-type': 'application/json' }),
        body: JSON.stringify({ name, models: ['*'], routes }),
        disclosesKey: true,
      });
      return jsonOf(created).key as string;
    };
    otherKey = await keyOf('other', ['files']);
    noFilesKey = await keyOf('no-files', ['chat']);
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
  });

  test(
    'parts for a completed upload, small and large: the SDK sees 409 upload_not_pending every time',
    TIMEOUT,
    async () => {
      for (const size of [1, 64 * 1024, 4 * MB]) {
        const data = await toFile(Buffer.alloc(size, 1), 'late');
        for (let round = 0; round < 12; round++) {
          await assert.rejects(client.uploads.parts.create(completedId, { data }), sawError(409, 'upload_not_pending'));
        }
      }
    },
  );

  test("parts for another caller's upload: the SDK sees 404 upload_not_found every time", TIMEOUT, async () => {
    const other = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: otherKey, maxRetries: 0 });
    for (const size of [1, 1 * MB]) {
      const data = await toFile(Buffer.alloc(size, 2), 'theirs');
      for (let round = 0; round < 12; round++) {
        await assert.rejects(other.uploads.parts.create(completedId, { data }), sawError(404, 'upload_not_found'));
      }
    }
  });

  test('a file from a caller without the files right: the SDK sees 403 every time', TIMEOUT, async () => {
    const denied = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: noFilesKey, maxRetries: 0 });
    const file = await toFile(Buffer.alloc(1 * MB, 3), 'denied.jsonl');
    for (let round = 0; round < 12; round++) {
      await assert.rejects(denied.files.create({ file, purpose: 'batch' }), sawError(403));
    }
  });

  test(
    'a part past files.max_part_bytes, refused mid-way: the SDK sees 413 file_too_large every time',
    TIMEOUT,
    async () => {
      const upload = await client.uploads.create({ filename: 'b', purpose: 'batch', bytes: 8 * MB, mime_type: 'a/b' });
      const data = await toFile(Buffer.alloc(8 * MB, 5), 'too-big');
      for (let round = 0; round < 6; round++) {
        await assert.rejects(client.uploads.parts.create(upload.id, { data }), sawError(413, 'file_too_large'));
      }
    },
  );

  test('a JSON body over the body limit: the SDK sees 413 payload_too_large every time', TIMEOUT, async () => {
    const content = 'x'.repeat(16 * MB); // more than the socket buffers take at once: the SDK is still writing
    for (let round = 0; round < 6; round++) {
      await assert.rejects(
        client.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content }] }),
        sawError(413, 'payload_too_large'),
      );
    }
  });

  test(
    'a form refused while it is parsed (a field too long, a second file) is answered 400, not cut',
    TIMEOUT,
    async () => {
      const forms = [
        (form: FormData) => form.append('purpose', 'x'.repeat(5000)),
        (form: FormData) => form.append('extra', new Blob([Buffer.alloc(10)]), 'first.bin'),
      ];
      for (const [index, lead] of forms.entries()) {
        for (let round = 0; round < 6; round++) {
          const form = new FormData();
          lead(form);
          form.append('file', new Blob([Buffer.alloc(4 * MB, 4)]), 'big.jsonl');
          const answer = await fetch(`${gw.url}/v1/files`, {
            method: 'POST',
            headers: bearer(ADMIN),
            body: form,
          }).catch((error: unknown) => error as Error);
          assert.ok(answer instanceof Response, `form ${index}: the client saw ${String(answer)}`);
          assert.equal(answer.status, 400);
          assert.equal(((await answer.json()) as { code?: string }).code, 'invalid_multipart');
        }
      }
    },
  );

  test(
    `the rest of a refused body is read up to ${LINGER_MAX_BYTES / MB} MiB, then the connection closes`,
    TIMEOUT,
    async () => {
      const head = await partHead(gw.port, `/v1/uploads/${completedId}/parts`, 1024 * MB);
      await waitFor('the 409 answer', () => head.answer().includes('upload_not_pending'));
      const written = await writeUntilClosed(head.socket);
      await head.closed;
      assert.match(head.answer(), /^HTTP\/1\.1 409 /);
      assert.match(head.answer(), /\r\nconnection: close\r\n/i);
      // Read on after the answer (not cut at once, after a few MB of socket buffers), and cut at the bound.
      assert.ok(written >= 32 * MB, `the gateway read on after its answer: ${written} bytes`);
      assert.ok(written <= LINGER_MAX_BYTES + 32 * MB, `the gateway stopped reading at its bound: ${written} bytes`);
    },
  );

  test(`a caller dribbling the rest of a refused body is cut after ${LINGER_MAX_MS / 1000} s`, TIMEOUT, async () => {
    const head = await partHead(gw.port, `/v1/uploads/${completedId}/parts`, 10 * MB);
    await waitFor('the 409 answer', () => head.answer().includes('upload_not_pending'));
    const answeredAt = Date.now();
    const dribble = setInterval(() => head.socket.write('x'), 50);
    try {
      await head.closed;
    } finally {
      clearInterval(dribble);
    }
    const held = Date.now() - answeredAt;
    assert.ok(held >= LINGER_MAX_MS - 1000, `the connection stayed while the body arrived: ${held} ms`);
    assert.ok(held <= LINGER_MAX_MS + 10_000, `and closed at the time bound: ${held} ms`);
    assert.match(head.answer(), /^HTTP\/1\.1 409 /);
  });

  test('a request sent after a refused body, on the same connection, is never run', TIMEOUT, async () => {
    const keyNames = async () => {
      const listed = jsonOf(await httpCall(`${gw.url}/v1/?route=keys`, { headers: bearer(ADMIN) }));
      return JSON.stringify(listed);
    };
    const cases = [
      {
        name: 'after-409',
        http: '1.1',
        head: () => partHead(gw.port, `/v1/uploads/${completedId}/parts`, 64 * 1024 + 300),
      },
      { name: 'after-404', http: '1.0', head: () => rawHead(gw.port, 'POST /v1/nowhere HTTP/1.0', 20) },
    ];
    for (const { name, head: open } of cases) {
      const head = await open();
      await waitFor(`${name}: the early answer`, () => /\r\n\r\n/.test(head.answer()));
      const declared = Number(/Content-Length: (\d+)/i.exec(head.sent)?.[1]);
      const created = JSON.stringify({ name: `smuggled-${name}`, models: ['*'], routes: ['chat'] });
      // The end of the refused body and, in the same write, a second request (a key created by the admin).
      head.socket.write(
        Buffer.concat([
          Buffer.alloc(declared - head.bodySent, 0x61),
          Buffer.from(
            `POST /v1/?route=keys HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN}\r\n` +
              `Content-Type: application/json\r\nContent-Length: ${created.length}\r\n\r\n${created}`,
          ),
        ]),
      );
      // Empty lines are ignored between requests; once the gateway has closed its socket one is answered with a reset.
      const poke = setInterval(() => head.socket.write('\r\n'), 100);
      try {
        await head.closed;
      } finally {
        clearInterval(poke);
      }
      assert.equal(head.answer().match(/HTTP\/1\.1 \d{3} /g)?.length, 1, `${name}: one answer only: ${head.answer()}`);
      assert.match(head.answer(), /\r\nconnection: close\r\n/i);
      // The second request was not run: no key of that name.
      assert.ok(!(await keyNames()).includes(`smuggled-${name}`), `${name}: the request after the refusal ran`);
    }
  });

  test('a refused body that ends within the bounds: the connection closes once it is read', TIMEOUT, async () => {
    const declared = 4 * MB;
    const head = await partHead(gw.port, `/v1/uploads/${completedId}/parts`, declared);
    await waitFor('the 409 answer', () => head.answer().includes('upload_not_pending'));
    const startedAt = Date.now();
    head.socket.write(Buffer.alloc(declared - head.bodySent)); // the rest of the body, exactly
    // Empty lines between requests are ignored by a server still reading (RFC 9112 section 2.2); once the gateway
    // has closed its socket, the next one is answered with a reset, which closes ours.
    const poke = setInterval(() => head.socket.write('\r\n'), 100);
    try {
      await head.closed;
    } finally {
      clearInterval(poke);
    }
    const held = Date.now() - startedAt;
    assert.ok(held < LINGER_MAX_MS - 1000, `closed once the body was read, not at the time bound: ${held} ms`);
    assert.match(head.answer(), /^HTTP\/1\.1 409 /);
    // The gateway is still answering (nothing was left behind).
    assert.equal((await httpCall(`${gw.url}/v1/?route=health`)).status, 200);
  });
});
