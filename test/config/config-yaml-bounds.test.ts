/**
 * A YAML config file's parse is bounded by its length (issue 41, adversarial pass; docs/config.md, "Files the
 * config names"): within the 4 MiB bound, 2 MB of nested `[` cost the parser 16 s and 1.25 GB, and a mapping of
 * 60,000 keys minutes (its duplicate-key check is quadratic). Nesting is refused before parsing, duplicate keys are
 * found in one pass, and a refused file's problem lists a few unknown keys, not all of them. At a live reload, on
 * the real process, such a file is refused for what it holds, well within the reader thread's 30 s.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import {
  HEALTH_PATH,
  httpCall,
  killAllGateways,
  logLines,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
} from '../helpers/spawn-gateway.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = 'config-yaml-bounds-admin-token-0123456789';

after(async () => {
  await killAllGateways();
  removeTempDirs();
});

/** The problems loadConfig reports for a YAML file holding `text`. */
function problemsOf(text: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'gw-yaml-'));
  try {
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, text);
    loadConfig({ GATEWAY_ENV: 'dev', ADMIN_TOKEN: TOKEN, DATA_DIR: dir, GATEWAY_CONFIG: file });
    return [];
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.problems;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A mapping of `n` distinct keys under one unknown key (a file that is not a config, and slow to parse). */
const manyKeys = (n: number) => `x:\n${Array.from({ length: n }, (_, i) => `  k${i}: v\n`).join('')}`;

describe('a YAML config file, at start', () => {
  test('flow collections nested 100,000 deep: refused naming the bound and the line, not parsed', () => {
    const problems = problemsOf(`server:\n  port: 8080\nmodels: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`);
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0] ?? '', /not valid YAML: collections nested deeper than 64 levels .* at line 3$/);
  });

  test('nesting within the bound, and brackets inside strings, parse as before', () => {
    const problems = problemsOf(`x: "[[[[ {{"\ny: |\n  [[[[\nz: [a, {b: [1, [2]]}]\n`);
    assert.deepEqual(
      problems.map((p) => p.replace(/^.*gateway\.yaml: /, '')),
      ['(root): 3 unrecognized keys (x, y, z)'],
    );
  });

  test('a key repeated in one mapping is refused with its line, never quoting the key', () => {
    const problems = problemsOf('server:\n  port: 8080\n  sk-pasted-secret-1: a\n  sk-pasted-secret-1: b\n');
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0] ?? '', /not valid YAML: a key repeated in one mapping at line 4 \(keys must be unique\)$/);
    assert.ok(!problems[0]?.includes('sk-pasted'));
    // The same key in two mappings is not a repeat.
    assert.deepEqual(problemsOf('server:\n  port: 8080\ndashboard:\n  enabled: false\n'), []);
  });

  test('100,000 unknown keys: one problem naming ten of them and how many more', () => {
    const text = Array.from({ length: 100_000 }, (_, i) => `unknown_${i}: 1\n`).join('');
    const problems = problemsOf(text);
    assert.equal(problems.length, 1);
    assert.match(problems[0] ?? '', /\(root\): 100000 unrecognized keys \(unknown_0, .*, unknown_9 and 99990 more\)$/);
    assert.ok((problems[0]?.length ?? 0) < 400, `${problems[0]?.length} characters`);
  });
});

describe('a YAML config file, at a live reload of the real process', () => {
  let gw: GatewayProcess;
  let file: string;
  before(async () => {
    const dir = makeTempDir('gw-yaml-');
    file = join(dir, 'gateway.yaml');
    writeFileSync(file, 'server:\n  request_timeout_seconds: 30\n');
    gw = await startGatewayProcess({
      env: { GATEWAY_ENV: 'prod', ADMIN_TOKEN: TOKEN, GATEWAY_CONFIG: file, LOG_LEVEL: 'info' },
    });
  });
  after(async () => {
    await gw.kill();
  });

  test('60,000 keys in one mapping: refused for the unknown key within seconds, health answering throughout', async () => {
    const temporary = `${file}.tmp`;
    writeFileSync(temporary, manyKeys(60_000));
    renameSync(temporary, file);
    const refused = () => logLines(gw.stdout()).filter((l) => String(l.msg).startsWith('config reload refused'));
    const started = Date.now();
    await waitFor(
      'the reload refused, health answering throughout',
      async () => {
        const health = await httpCall(`${gw.url}${HEALTH_PATH}`, { timeoutMs: 2_000 });
        assert.equal(health.status, 200);
        return refused().length > 0;
      },
      40_000,
    );
    const problems = (refused()[0]?.problems ?? []) as string[];
    // The reader thread gives up at 30 s: a parse that long is refused as "did not answer", not for what it holds.
    assert.deepEqual(
      problems.map((p) => p.replace(/^.*gateway\.yaml: /, '')),
      ['(root): Unrecognized key (x)'],
      `after ${Date.now() - started} ms`,
    );
  });
});
