/**
 * Files the config names (issue 41: api_key_file, the config file, the price catalog...) on the real process: a
 * FIFO is never waited on, a device is never read, a file that is not one secret line is refused naming the file
 * (never its content); at start the gateway refuses to start, at a live reload it keeps serving on the running
 * configuration while health answers throughout (docs/config.md, "Files the config names").
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import {
  CHAT_PATH,
  HEALTH_PATH,
  bearer,
  chatRequestBody,
  httpCall,
  killAllGateways,
  logLines,
  makeTempDir,
  removeTempDirs,
  spawnGateway,
  startGatewayProcess,
  type GatewayProcess,
} from '../helpers/spawn-gateway.js';
import { waitFor } from '../helpers/wait.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';

const TOKEN = 'config-files-admin-token-0123456789';
const KEY = 'sk-config-files-upstream-key-1';
/** How long a start that refuses may take: a config child and its modules under tsx, on a busy machine. */
const START_REFUSAL_MS = 20_000;

const fifos: string[] = [];

after(async () => {
  await killAllGateways();
  // A process still blocked opening one of them (a gateway that waits on a FIFO) is let go: a writer comes and goes.
  for (const fifo of fifos) {
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {
      // no reader waiting (ENXIO), or the FIFO was replaced
    }
  }
  removeTempDirs();
});

function mkfifo(path: string): string {
  execFileSync('mkfifo', [path]);
  fifos.push(path);
  return path;
}

function configText(baseUrl: string, keyFile: string): string {
  return JSON.stringify({
    upstreams: [{ name: 'up', base_url: baseUrl, api_key_file: keyFile, health_check: 'none' }],
    models: [{ id: 'm', upstream: 'up' }],
  });
}

/** Writes the file as editors do: a new file renamed over the old one. */
function replaceFile(path: string, text: string): void {
  const temporary = `${path}.tmp-${Date.now()}`;
  writeFileSync(temporary, text);
  renameSync(temporary, path);
}

const env = (file: string) => ({ GATEWAY_ENV: 'prod', ADMIN_TOKEN: TOKEN, GATEWAY_CONFIG: file, LOG_LEVEL: 'info' });

/** A gateway that must refuse to start: its exit within the bound, and what it printed. */
async function refusedStart(dir: string, keyFile: string): Promise<{ code: number | null; stderr: string }> {
  const file = join(dir, 'gateway.json');
  writeFileSync(file, configText('http://127.0.0.1:9/v1', keyFile));
  const gw = await spawnGateway({ env: env(file) });
  try {
    const exit = await gw.waitForExit(START_REFUSAL_MS);
    return { code: exit.code, stderr: gw.stderr() };
  } finally {
    await gw.kill();
  }
}

describe('a file the config names, at start', () => {
  test('api_key_file naming a FIFO: the start refuses at once, naming the field and the kind of file', async () => {
    const dir = makeTempDir('gw-files-');
    const fifo = mkfifo(join(dir, 'key.fifo'));
    const { code, stderr } = await refusedStart(dir, fifo);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /upstreams\[0\]\.api_key_file: cannot read .*key\.fifo \(not a regular file: a FIFO\)/);
  });

  test('api_key_file naming /etc/passwd (many lines): refused naming the file, never quoting it', async () => {
    const dir = makeTempDir('gw-files-');
    const { code, stderr } = await refusedStart(dir, '/etc/passwd');
    assert.equal(code, 1, stderr);
    assert.match(stderr, /upstreams\[0\]\.api_key_file: \/etc\/passwd holds more than one line/);
    const firstLine = readFileSync('/etc/passwd', 'utf8').split('\n')[0] ?? '';
    assert.ok(firstLine.length > 0 && !stderr.includes(firstLine), 'the content is not printed');
    assert.ok(!stderr.includes('root:'), 'no part of the file is printed');
  });

  test('server.tls.cert_file naming a FIFO: the start refuses at once, naming the field', async () => {
    const dir = makeTempDir('gw-files-');
    const fifo = mkfifo(join(dir, 'cert.pem'));
    writeFileSync(join(dir, 'key.pem'), 'not read: the certificate is refused first or alongside\n');
    const file = join(dir, 'gateway.json');
    writeFileSync(file, JSON.stringify({ server: { tls: { cert_file: './cert.pem', key_file: './key.pem' } } }));
    const gw = await spawnGateway({ env: env(file) });
    try {
      const exit = await gw.waitForExit(START_REFUSAL_MS);
      assert.equal(exit.code, 1, gw.stderr());
      assert.ok(
        gw.stderr().includes(`server.tls.cert_file: cannot read ${fifo} (not a regular file: a FIFO)`),
        gw.stderr(),
      );
    } finally {
      await gw.kill();
    }
  });

  test('the config file itself a FIFO: refused at once', async () => {
    const dir = makeTempDir('gw-files-');
    const fifo = mkfifo(join(dir, 'gateway.json'));
    const gw = await spawnGateway({ env: env(fifo) });
    try {
      const exit = await gw.waitForExit(START_REFUSAL_MS);
      assert.equal(exit.code, 1, gw.stderr());
      assert.match(gw.stderr(), /GATEWAY_CONFIG: cannot read .*gateway\.json \(not a regular file: a FIFO\)/);
    } finally {
      await gw.kill();
    }
  });
});

describe('a secret a file or a variable holds', () => {
  const load = (dir: string, upstream: Record<string, unknown>, env: Record<string, string> = {}) => {
    const file = join(dir, 'gateway.json');
    writeFileSync(
      file,
      JSON.stringify({ upstreams: [{ name: 'up', base_url: 'http://127.0.0.1:9/v1', ...upstream }] }),
    );
    return loadConfig({ GATEWAY_ENV: 'dev', ADMIN_TOKEN: TOKEN, GATEWAY_CONFIG: file, ...env });
  };
  const problemsOf = (run: () => unknown): string[] => {
    try {
      run();
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
    return [];
  };

  test('one line, its final line break trimmed: the key', () => {
    const dir = makeTempDir('gw-files-');
    writeFileSync(join(dir, 'key'), `${KEY}\r\n`);
    assert.equal(load(dir, { api_key_file: './key' }).upstreams[0]?.apiKey, KEY);
  });

  test('a control character, a byte that is not ASCII, or a file over 64 KiB: refused naming the file only', () => {
    const dir = makeTempDir('gw-files-');
    const cases: Array<[string, string | Buffer, RegExp]> = [
      ['escape', 'sk-abc\u001b[31mdef', /\.\/escape holds a character that is not printable ASCII/],
      ['bom', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('sk-abcdef')]), /\.\/bom holds a character/],
      ['tab', 'sk-abc\tdef', /\.\/tab holds a character that is not printable ASCII/],
      ['huge', 'k'.repeat(64 * 1024 + 1), /cannot read \.\/huge \(larger than 65536 bytes/],
      ['empty', '\n', /\.\/empty is empty/],
    ];
    for (const [name, content, expected] of cases) {
      writeFileSync(join(dir, name), content);
      const problems = problemsOf(() => load(dir, { api_key_file: `./${name}` }));
      assert.equal(problems.length, 1, `${name}: ${problems.join('; ')}`);
      assert.match(problems[0] as string, /^upstreams\[0\]\.api_key_file: /);
      assert.match(problems[0] as string, expected);
      assert.ok(!(problems[0] as string).includes('sk-abc'), 'the content is never quoted');
    }
  });

  test('a variable holding two lines is refused naming the variable, never its value', () => {
    const dir = makeTempDir('gw-files-');
    const problems = problemsOf(() =>
      load(dir, { api_key_env: 'UP_KEY' }, { UP_KEY: 'sk-first-line\nsk-second-line' }),
    );
    assert.deepEqual(problems, [
      'upstreams[0].api_key_env: environment variable UP_KEY holds more than one line (a secret is one line: the secret itself)',
    ]);
  });

  test('a config file over 4 MiB is refused unread', () => {
    const dir = makeTempDir('gw-files-');
    const file = join(dir, 'gateway.json');
    writeFileSync(file, `{"models": [], "x": "${'y'.repeat(4 * 1024 * 1024)}"}`);
    const problems = problemsOf(() => loadConfig({ GATEWAY_ENV: 'dev', ADMIN_TOKEN: TOKEN, GATEWAY_CONFIG: file }));
    assert.deepEqual(problems, [
      `GATEWAY_CONFIG: cannot read ${file} (larger than 4194304 bytes, the bound for this file)`,
    ]);
  });
});

/** The process's peak resident set (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(match, 'VmHWM in /proc/<pid>/status');
  return Number(match[1]) * 1024;
}

describe('a file the config names, at a live reload', () => {
  let mock: OpenAiUpstream;
  let gw: GatewayProcess;
  let dir: string;
  let file: string;
  let refusals = 0;

  before(async () => {
    mock = await startOpenAiUpstream();
    dir = makeTempDir('gw-files-');
    writeFileSync(join(dir, 'key'), `${KEY}\n`);
    file = join(dir, 'gateway.json');
    writeFileSync(file, configText(mock.baseUrl, './key'));
    gw = await startGatewayProcess({ env: env(file) });
  });
  after(async () => {
    await gw.kill();
    await mock.close();
  });

  /** Health answers within 1 s each time it is asked, until the reload's refusal is logged; returns that line. */
  async function refusedWhileHealthy(): Promise<Record<string, unknown>> {
    const want = ++refusals;
    const refused = () => logLines(gw.stdout()).filter((l) => String(l.msg).startsWith('config reload refused'));
    let healthChecks = 0;
    await waitFor(
      `reload refusal ${want}, health answering throughout`,
      async () => {
        const health = await httpCall(`${gw.url}${HEALTH_PATH}`, { timeoutMs: 1_000 });
        assert.equal(health.status, 200);
        healthChecks++;
        return refused().length >= want;
      },
      15_000,
    );
    assert.ok(healthChecks > 0);
    return refused()[want - 1] as Record<string, unknown>;
  }

  async function stillServesWithTheRunningKey(): Promise<void> {
    const before = mock.requests.length;
    const answer = await httpCall(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: bearer(TOKEN, { 'content-type': 'application/json' }),
      body: chatRequestBody('m', false),
    });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(mock.requests[before]?.headers.authorization, `Bearer ${KEY}`);
  }

  test('api_key_file changed to a FIFO: the reload is refused, health answers throughout, calls keep the key', async () => {
    const fifo = mkfifo(join(dir, 'key.fifo'));
    replaceFile(file, configText(mock.baseUrl, fifo));
    const line = await refusedWhileHealthy();
    assert.match(String(line.msg), /api_key_file: cannot read .*key\.fifo \(not a regular file: a FIFO\)/);
    await stillServesWithTheRunningKey();
  });

  test('api_key_file changed to /dev/zero: refused at once, without the process growing', async (t) => {
    const peakBefore = peakRss(gw.child.pid as number);
    replaceFile(file, configText(mock.baseUrl, '/dev/zero'));
    const line = await refusedWhileHealthy();
    assert.match(String(line.msg), /api_key_file: cannot read \/dev\/zero \(not a regular file: a character device\)/);
    const grown = peakRss(gw.child.pid as number) - peakBefore;
    // The reload's thread (zod, the config modules) costs some tens of MB; reading /dev/zero would cost gigabytes.
    assert.ok(grown < 128 * 1024 * 1024, `peak RSS grew by ${grown} bytes`);
    t.diagnostic(`peak RSS grew by ${Math.round(grown / 1024 / 1024)} MB`);
    await stillServesWithTheRunningKey();
  });

  test('api_key_file changed to a file of many lines: refused naming the file, the log never quotes it', async () => {
    writeFileSync(join(dir, 'pasted'), 'sk-first-line-of-the-file\nSECOND-LINE-NOT-A-KEY\n');
    replaceFile(file, configText(mock.baseUrl, './pasted'));
    const line = await refusedWhileHealthy();
    assert.match(String(line.msg), /api_key_file: \.\/pasted holds more than one line/);
    assert.ok(!gw.stdout().includes('SECOND-LINE-NOT-A-KEY') && !gw.stdout().includes('sk-first-line'));
    await stillServesWithTheRunningKey();
  });

  test('price_catalog changed to /dev/zero: refused, health answers throughout', async () => {
    const text = JSON.parse(configText(mock.baseUrl, './key')) as Record<string, unknown>;
    replaceFile(file, JSON.stringify({ ...text, price_catalog: '/dev/zero' }));
    const line = await refusedWhileHealthy();
    assert.match(String(line.msg), /price_catalog: cannot read \/dev\/zero \(not a regular file: a character device\)/);
    await stillServesWithTheRunningKey();
  });

  test('the config file renamed over by a FIFO: refused, health answers throughout', async () => {
    const fifo = mkfifo(join(dir, 'next.fifo'));
    renameSync(fifo, file);
    const line = await refusedWhileHealthy();
    assert.match(String(line.msg), /GATEWAY_CONFIG: cannot read .*gateway\.json \(not a regular file: a FIFO\)/);
    await stillServesWithTheRunningKey();
  });
});
