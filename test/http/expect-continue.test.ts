/**
 * `Expect: 100-continue` (http/expect-continue.ts): a request the gateway refuses before reading its body (no key,
 * a path to nowhere) gets its final answer and never `100 Continue`, so a client that waits sends no body; a request
 * whose body is read gets `100 Continue` first, then its answer. Raw sockets against the gateway process.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { killAllGateways, removeTempDirs, startGatewayProcess, type GatewayProcess } from '../helpers/spawn-gateway.js';
import { waitFor } from '../helpers/wait.js';

const ADMIN = 'expect-continue-admin-token-0123456789';
const TIMEOUT = { timeout: 30_000 };

/** Sends a request head with `Expect: 100-continue` and no body; what arrives, as it arrives. */
async function expecting(port: number, requestLine: string, headers: string, length: number) {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  socket.write(
    `${requestLine} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Expect: 100-continue\r\nContent-Length: ${length}\r\n\r\n`,
  );
  return { socket, received: () => received };
}

describe('Expect: 100-continue, from the gateway process', () => {
  let gw: GatewayProcess;
  before(async () => {
    gw = await startGatewayProcess({ env: { GATEWAY_ENV: 'dev', ADMIN_TOKEN: ADMIN, LOG_LEVEL: 'warn' } });
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
  });

  test('a request refused before its body is read: its answer, and no 100 Continue', TIMEOUT, async () => {
    const multipart = 'Content-Type: multipart/form-data; boundary=b\r\n';
    const cases = [
      { line: 'POST /v1/nowhere', headers: multipart, status: 404 },
      { line: 'POST /v1/files', headers: multipart, status: 401 },
      {
        line: 'POST /v1/files',
        headers: `Authorization: Bearer not-a-key-0123456789abcdef\r\n${multipart}`,
        status: 401,
      },
      { line: 'POST /v1/chat/completions', headers: 'Content-Type: application/json\r\n', status: 401 },
    ];
    for (const { line, headers, status } of cases) {
      const call = await expecting(gw.port, line, headers, 1024 * 1024 * 1024);
      await waitFor(`${line}: an answer`, () => call.received().includes('\r\n\r\n'));
      call.socket.destroy();
      assert.ok(
        call.received().startsWith(`HTTP/1.1 ${status} `),
        `${line}: the first thing written is the ${status}, not an invitation to send 1 GiB: ${call.received().slice(0, 80)}`,
      );
      assert.doesNotMatch(call.received(), /100 Continue/);
    }
  });

  test('a request whose body is read: 100 Continue, then the body, then its answer', TIMEOUT, async () => {
    const form =
      '--b\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n' +
      '--b\r\nContent-Disposition: form-data; name="file"; filename="in.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n' +
      '{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[]}}\r\n--b--\r\n';
    const key = JSON.stringify({ name: 'expect-continue', models: ['*'], routes: ['chat'] });
    const cases = [
      {
        line: 'POST /v1/files',
        headers: `Authorization: Bearer ${ADMIN}\r\nContent-Type: multipart/form-data; boundary=b\r\n`,
        body: form,
        answer: /^HTTP\/1\.1 200 [\s\S]*"object":"file"/,
      },
      {
        line: 'POST /v1/?route=keys',
        headers: `Authorization: Bearer ${ADMIN}\r\nContent-Type: application/json\r\n`,
        body: key,
        answer: /^HTTP\/1\.1 20[01] [\s\S]*"name":"expect-continue"/,
      },
    ];
    for (const { line, headers, body, answer } of cases) {
      const call = await expecting(gw.port, line, headers, Buffer.byteLength(body));
      await waitFor(`${line}: 100 Continue`, () => call.received().includes('\r\n\r\n'));
      assert.equal(call.received(), 'HTTP/1.1 100 Continue\r\n\r\n', `${line}: invited before the body`);
      call.socket.write(body);
      await waitFor(`${line}: the answer`, () => answer.test(call.received().slice(25)));
      call.socket.destroy();
    }
  });
});
