/**
 * What a config reload changed (config/config-diff.ts), which settings need a restart (config/restart-settings.ts),
 * and the file watch (config/config-watch.ts): over configs read by loadConfig from real files.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { diffConfigs, noChanges, sameEndpoint } from '../../src/config/config-diff.js';
import { keepRestartSettings } from '../../src/config/restart-settings.js';
import { watchConfigFile } from '../../src/config/config-watch.js';
import type { GatewayConfig } from '../../src/config/types.js';
import { waitFor } from '../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'gw-diff-'));
process.once('exit', () => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function configOf(file: object, env: Record<string, string> = {}): GatewayConfig {
  const path = join(dir, `c${++n}.json`);
  writeFileSync(path, JSON.stringify(file));
  return loadConfig({ GATEWAY_CONFIG: path, ...env });
}

const BASE = {
  upstreams: [
    { name: 'a', base_url: 'http://127.0.0.1:9001/v1' },
    { name: 'b', base_url: 'http://127.0.0.1:9002/v1' },
  ],
  models: [
    { id: 'm1', upstream: 'a', pricing: { input_per_million: 1 } },
    { id: 'm2', upstream: 'b' },
  ],
  limits: { models: { m1: { requests: { limit: 5 } } } },
};

describe('diffConfigs', () => {
  test('the same file twice: no change', () => {
    const changes = diffConfigs(configOf(BASE), configOf(BASE));
    assert.equal(noChanges(changes), true, JSON.stringify(changes));
  });

  test('models added, removed and changed; upstreams added, removed and changed, by field name', () => {
    const next = configOf({
      upstreams: [
        { name: 'a', base_url: 'http://127.0.0.1:9009/v1', max_concurrent: 4 },
        { name: 'c', base_url: 'http://127.0.0.1:9003/v1' },
      ],
      models: [
        { id: 'm1', upstream: 'a', upstream_model: 'other', pricing: { input_per_million: 1 } },
        { id: 'm3', upstream: 'c' },
      ],
      limits: BASE.limits,
    });
    const changes = diffConfigs(configOf(BASE), next);
    assert.deepEqual(changes.models, { added: ['m3'], removed: ['m2'], changed: ['m1'] });
    assert.deepEqual(changes.upstreams, {
      added: ['c'],
      removed: ['b'],
      changed: [{ name: 'a', fields: ['base_url', 'max_concurrent'] }],
    });
    assert.equal(changes.limits, false);
    assert.equal(changes.prices, false);
  });

  test('a price, a limit and other sections are named; a key change names `api_key`, never its value', () => {
    const before = configOf(
      { ...BASE, upstreams: [{ ...BASE.upstreams[0], api_key_env: 'K' }, BASE.upstreams[1]] },
      {
        K: 'sk-old-secret',
      },
    );
    const after = configOf(
      {
        ...BASE,
        upstreams: [{ ...BASE.upstreams[0], api_key_env: 'K2' }, BASE.upstreams[1]],
        models: [{ id: 'm1', upstream: 'a', pricing: { input_per_million: 2 } }, BASE.models[1]],
        limits: { models: { m1: { requests: { limit: 6 } } } },
        dashboard: { enabled: false },
        default_upstream: 'b',
      },
      { K2: 'sk-new-secret' },
    );
    const changes = diffConfigs(before, after);
    assert.equal(changes.prices, true);
    assert.equal(changes.limits, true);
    assert.deepEqual(changes.models.changed, ['m1']);
    assert.deepEqual(changes.upstreams.changed, [{ name: 'a', fields: ['api_key'] }]);
    assert.deepEqual(changes.sections, ['default_upstream', 'dashboard']);
    assert.doesNotMatch(JSON.stringify(changes), /sk-/);
  });

  test('sameEndpoint: the name, base URL and kind; a key or a bound is not another endpoint', () => {
    const a = configOf(BASE).upstreams[0] as GatewayConfig['upstreams'][number];
    assert.equal(sameEndpoint(a, { ...a, apiKey: 'x', maxConcurrent: 3 }), true);
    assert.equal(sameEndpoint(a, { ...a, baseUrl: 'http://127.0.0.1:1/v1' }), false);
  });
});

describe('keepRestartSettings', () => {
  test('names each restart-only setting that changed and keeps its running value; live ones pass', () => {
    const running = configOf({ ...BASE, server: { port: 8081, body_limit_bytes: 2048 } });
    const next = configOf({ ...BASE, server: { port: 8082, body_limit_bytes: 4096 }, metrics: { enabled: false } });
    const { config, needRestart } = keepRestartSettings(running, next);
    assert.deepEqual(needRestart, ['server.port (PORT)', 'server.body_limit_bytes', 'metrics.enabled']);
    assert.equal(config.port, 8081);
    assert.equal(config.bodyLimitBytes, 2048);
    assert.equal(config.metricsEnabled, true);
    assert.equal(config.source?.version, next.source?.version, 'the new file is what runs');
  });

  test('nothing restart-only changed: an empty list', () => {
    assert.deepEqual(keepRestartSettings(configOf(BASE), configOf(BASE)).needRestart, []);
  });
});

describe('watchConfigFile', () => {
  test('a file replaced by rename is noticed, twice, each change once after the quiet period', async () => {
    const path = join(dir, 'watched.json');
    writeFileSync(path, '{}');
    let calls = 0;
    const watch = watchConfigFile(path, () => calls++, 100);
    try {
      for (const round of [1, 2]) {
        const temporary = `${path}.tmp`;
        writeFileSync(temporary, JSON.stringify({ round }));
        renameSync(temporary, path);
        await waitFor(`change ${round} noticed`, () => calls >= round, 5_000);
      }
    } finally {
      watch.stop();
    }
    assert.ok(calls >= 2);
  });
});

test('the version is the short SHA-256 of the bytes: another byte, another version', () => {
  const a = configOf(BASE).source?.version;
  assert.match(String(a), /^[0-9a-f]{12}$/);
  assert.equal(configOf(BASE).source?.version, a);
  assert.notEqual(configOf({ ...BASE, retry: {} }).source?.version, a);
});
