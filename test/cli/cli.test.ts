/** The `gateway` command line: help for each command, config check, and the process entry point itself. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { spawn } from 'node:child_process';
import { runCli } from '../../src/cli/run-cli.js';
import { tailUsage } from '../../src/cli/usage-command.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import type { UsageRecord } from '../../src/store/store-contract.js';
import { PROJECT_ROOT } from '../helpers/paths.js';

const run = async (argv: string[], env: NodeJS.ProcessEnv = {}, stdin = '') => {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(
    argv,
    { DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-cli-')), ...env },
    { out: (l) => out.push(l), err: (l) => err.push(l) },
    async () => stdin,
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
};

describe('gateway CLI', () => {
  test('--help lists the commands; each command has its own --help; an unknown one is exit 2', async () => {
    const top = await run(['--help']);
    assert.equal(top.code, 0);
    for (const command of ['start', 'config check', 'keys', 'users', 'usage', 'webhooks'])
      assert.ok(top.out.includes(command), command);
    for (const command of ['start', 'config', 'keys', 'users', 'usage', 'webhooks']) {
      const help = await run([command, '--help']);
      assert.equal(help.code, 0);
      assert.match(help.out, new RegExp(`^gateway ${command}`));
    }
    const unknown = await run(['frobnicate']);
    assert.deepEqual([unknown.code, unknown.err.startsWith('unknown command "frobnicate"')], [2, true]);
  });

  test('config check: a valid file is summarised; an invalid one lists every problem with its field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-cli-cfg-'));
    const good = join(dir, 'good.yaml');
    writeFileSync(
      good,
      'upstreams:\n  - { name: local, kind: ollama }\nmodels:\n  - { id: fast, upstream: local, upstream_model: llama3 }\n',
    );
    const ok = await run(['config', 'check', good]);
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /^ok: .*good\.yaml is valid for environment dev/);
    assert.match(ok.out, /upstreams: local \(ollama, 127\.0\.0\.1:11434\)/);
    // The file's shape first (every field that does not fit), then what refers to what (every broken reference).
    const shape = join(dir, 'shape.yaml');
    writeFileSync(
      shape,
      'upstreams:\n  - { name: x, base_url: "not a url", api_key: sk-literal, max_connections: 0 }\n',
    );
    const badShape = await run(['config', 'check', shape]);
    assert.equal(badShape.code, 2);
    for (const field of ['upstreams[0].api_key', 'upstreams[0].base_url', 'upstreams[0].max_connections'])
      assert.ok(badShape.err.includes(field), `${field} in:\n${badShape.err}`);
    assert.ok(!badShape.err.includes('sk-literal'), 'a secret is never echoed');
    const refs = join(dir, 'refs.yaml');
    writeFileSync(
      refs,
      'upstreams:\n  - { name: x, base_url: "http://10.1.1.1/v1" }\nmodels:\n  - { id: m, upstream: nope }\nwebhooks:\n  subscriptions: [{ id: h, url: "http://127.0.0.1/h", secrets: [{ env: NOT_SET }], events: ["*"] }]\n',
    );
    const refused = await run(['config', 'check', refs]);
    assert.equal(refused.code, 2);
    for (const field of [
      'upstreams[0].base_url: plain http://',
      'models[0].upstream',
      'webhooks.subscriptions[0].url',
      'webhooks.subscriptions[0].secrets[0].env',
    ]) {
      assert.ok(refused.err.includes(field), `${field} in:\n${refused.err}`);
    }
  });

  test('users hash-password reads stdin and prints a scrypt hash; a short password is refused', async () => {
    const hashed = await run(['users', 'hash-password'], {}, 'a long enough password\n');
    assert.equal(hashed.code, 0);
    assert.match(hashed.out, /^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    assert.equal((await run(['users', 'hash-password'], {}, 'short')).code, 2);
  });

  test("the process entry point (bin) runs and exits with the command's code", async () => {
    const exec = promisify(execFile);
    const { stdout } = await exec(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', '--help'], {
      cwd: PROJECT_ROOT,
    });
    assert.match(stdout, /^usage: gateway <command>/);
    await assert.rejects(
      exec(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'nope'], {
        cwd: PROJECT_ROOT,
      }),
      (e: { code?: number }) => e.code === 2,
    );
  });

  test('usage tail: the last records, then each new one live as it is written, until SIGINT (exit 0)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-cli-tail-'));
    const store = await openSqliteStore(dataDir);
    const usage = new SqliteUsageStore(store.db);
    const record = (requestId: string, timeMs: number, extra: Partial<UsageRecord> = {}): UsageRecord => ({
      timeMs,
      requestId,
      caller: 'key:k1',
      environment: 'dev',
      route: 'chat',
      model: 'fast',
      upstream: 'default',
      status: 200,
      code: null,
      latencyMs: 12.5,
      ttfbMs: null,
      stream: false,
      promptTokens: 10,
      completionTokens: 5,
      costUsd: null,
      attempts: 1,
      replay: false,
      cacheHit: false,
      usageAnomaly: false,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
      cacheSavingsUsd: null,
      ...extra,
    });
    const t0 = Date.now() - 60_000;
    await usage.append([record('old-1', t0), record('old-2', t0 + 1)]);
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'usage', 'tail', '--interval', '0.1'],
      {
        cwd: PROJECT_ROOT,
        env: { ...process.env, DATA_DIR: dataDir, GATEWAY_ENV: 'dev' },
      },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    const waitFor = async (pattern: RegExp) => {
      const deadline = Date.now() + 15_000;
      while (!pattern.test(stdout)) {
        if (Date.now() > deadline) throw new Error(`not printed in time: ${pattern}; got:\n${stdout}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    try {
      await waitFor(/old-2/);
      const liveMs = Date.now();
      await usage.append([
        record('live-1', liveMs, { status: 502, code: 'upstream_error', promptTokens: null, completionTokens: null }),
        record('live-2', liveMs + 1),
      ]);
      await waitFor(/live-2/);
      // Stored later but arrived earlier (a long stream), and one sharing live-2's millisecond: both still shown.
      await usage.append([
        record('late-stream', t0 - 5_000, { model: 'evil\u001b[2J' }),
        record('same-ms', liveMs + 1),
      ]);
      await waitFor(/same-ms/);
      child.kill('SIGINT');
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      assert.equal(code, 0);
      const lines = stdout.trim().split('\n');
      assert.match(lines[0] ?? '', /^time \(UTC\)\s+status\s+code/);
      assert.deepEqual(
        lines.slice(1).map((l) => l.split(/\s+/).at(-1)),
        ['old-1', 'old-2', 'live-1', 'live-2', 'late-stream', 'same-ms'],
        'in storage order, each once',
      );
      assert.match(lines[3] ?? '', /502\s+upstream_error\s+chat\s+fast\s+default\s+key:k1\s+12\.5\s+-\s+live-1$/);
      assert.match(
        lines[5] ?? '',
        /evil\?\[2J/,
        'a control character from a caller-chosen model id is not sent to the terminal',
      );
      assert.ok(!stdout.includes('\u001b'));
    } finally {
      child.kill('SIGKILL');
      await store.close();
    }
  });

  for (const failures of [false, true]) {
    test(`usage tail${failures ? ' --failures' : ''}: the last 10 stored records once, then only new ones (older records are not reprinted at the first poll)`, async () => {
      const store = await openSqliteStore(mkdtempSync(join(tmpdir(), 'gw-cli-tail-old-')));
      const usage = new SqliteUsageStore(store.db);
      const t0 = Date.now() - 60_000;
      // 40 stored records; with --failures every other one is a failure.
      await usage.append(
        Array.from({ length: 40 }, (_, i): UsageRecord => ({
          timeMs: t0 + i,
          requestId: `old-${i + 1}`,
          caller: 'admin',
          environment: 'dev',
          route: 'chat',
          model: 'm',
          upstream: 'u',
          status: i % 2 === 1 ? 502 : 200,
          code: i % 2 === 1 ? 'upstream_error' : null,
          latencyMs: 1,
          ttfbMs: null,
          stream: false,
          promptTokens: 1,
          completionTokens: 1,
          costUsd: null,
          attempts: 1,
          replay: false,
          cacheHit: false,
          usageAnomaly: false,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          reasoningTokens: 0,
          cacheSavingsUsd: null,
        })),
      );
      const lines: string[] = [];
      let polls = 0;
      // The real store, counting the tail's reads so the test can wait for polls instead of sleeping.
      const counted = new Proxy(usage, {
        get: (target, name, receiver) =>
          name === 'stored'
            ? (...args: Parameters<SqliteUsageStore['stored']>) => ((polls += 1), target.stored(...args))
            : Reflect.get(target, name, receiver),
      });
      const stop = new AbortController();
      const until = async (what: string, check: () => boolean) => {
        const deadline = Date.now() + 10_000;
        while (!check()) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; printed:\n${lines.join('\n')}`);
          await new Promise((r) => setTimeout(r, 10));
        }
      };
      const args = ['--interval', '0.05', '--format', 'json', ...(failures ? ['--failures'] : [])];
      const done = tailUsage(
        counted,
        args,
        { out: (l) => lines.push(l), err: () => undefined },
        { signal: stop.signal },
      );
      try {
        await until('two polls after the first read', () => polls >= 3);
        await usage.append([
          {
            timeMs: Date.now(),
            requestId: 'live-1',
            caller: 'admin',
            environment: 'dev',
            route: 'chat',
            model: 'm',
            upstream: 'u',
            status: 503,
            code: 'upstream_error',
            latencyMs: 1,
            ttfbMs: null,
            stream: false,
            promptTokens: null,
            completionTokens: null,
            costUsd: null,
            attempts: 1,
            replay: false,
            cacheHit: false,
            usageAnomaly: false,
            cacheReadTokens: null,
            cacheWriteTokens: null,
            reasoningTokens: null,
            cacheSavingsUsd: null,
          },
        ]);
        await until('live-1', () => lines.some((l) => l.includes('"live-1"')));
        const before = polls;
        await until('two more polls', () => polls >= before + 2);
      } finally {
        stop.abort();
        assert.equal(await done, 0);
        await store.close();
      }
      const printed = lines.map((l) => (JSON.parse(l) as { requestId: string }).requestId);
      const last10 = failures
        ? Array.from({ length: 10 }, (_, i) => `old-${22 + 2 * i}`)
        : Array.from({ length: 10 }, (_, i) => `old-${31 + i}`);
      assert.deepEqual(printed, [...last10, 'live-1']);
    });
  }

  test('usage tail refuses a bad interval or format, naming the flag', async () => {
    const bad = await run(['usage', 'tail', '--interval', '0']);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--interval: seconds between polls/);
    const format = await run(['usage', 'tail', '--format', 'csv']);
    assert.equal(format.code, 2);
    assert.match(format.err, /--format: table or json/);
  });
});
