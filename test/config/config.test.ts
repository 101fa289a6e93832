import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { parseAdminTokens } from '../../src/config/env-values.js';
import { DEFAULT_TIMEOUTS } from '../../src/config/upstreams.js';

function withFile(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-config-'));
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  assert.fail('expected a ConfigError');
}

describe('configuration', () => {
  test('defaults: dev, 127.0.0.1:8080, ./data, 1 MiB body limit, no upstream', () => {
    const config = loadConfig({}, { cwd: '/srv/gw' });
    assert.equal(config.environment, 'dev');
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.port, 8080);
    assert.equal(config.dataDir, '/srv/gw/data');
    assert.equal(config.bodyLimitBytes, 1024 * 1024);
    assert.deepEqual(config.upstreams, []);
    assert.equal(config.devEchoModel, true);
    assert.equal(config.workers, 1);
    assert.equal(config.limits.upstreamPauseMaxMs, 60_000);
  });

  test('UPSTREAM_KIND picks the wire format of the environment upstream; an unknown kind is refused', () => {
    const anthropic = loadConfig({ UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1', UPSTREAM_KIND: 'anthropic' })
      .upstreams[0];
    assert.equal(anthropic?.kind, 'anthropic');
    const azure = loadConfig({ UPSTREAM_BASE_URL: 'https://r.openai.azure.com/openai', UPSTREAM_KIND: 'azure' })
      .upstreams[0];
    assert.deepEqual([azure?.auth, azure?.deploymentInPath, azure?.apiVersion], ['api-key', true, '2024-10-21']);
    assert.equal(loadConfig({ UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1' }).upstreams[0]?.kind, 'openai-compatible');
    assert.equal(
      problemsOf(() =>
        loadConfig({ UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1', UPSTREAM_KIND: 'gemini-x' }),
      )[0]?.startsWith('UPSTREAM_KIND: must be one of'),
      true,
    );
  });

  test('model targets, fallbacks and retry: references checked, upstream or targets required, defaults applied', () => {
    const ok = loadConfig({
      GATEWAY_CONFIG: withFile(
        'r.yaml',
        [
          'upstreams: [{ name: a, base_url: "http://127.0.0.1:1/v1" }, { name: b, base_url: "http://127.0.0.1:2/v1" }]',
          'models:',
          '  - { id: m, targets: [{ upstream: a, weight: 2 }, { upstream: b, upstream_model: mb }], fallbacks: [{ upstream: b }], retry: { attempts: 3 } }',
          'retry: { attempts: 2, deadline_ms: 5000 }',
        ].join('\n'),
      ),
    });
    const model = ok.models[0];
    assert.deepEqual(model?.targets, [
      { upstream: 'a', upstreamModel: 'm', weight: 2 },
      { upstream: 'b', upstreamModel: 'mb', weight: 1 },
    ]);
    assert.deepEqual(model?.fallbacks, [{ upstream: 'b', upstreamModel: 'm', weight: 1 }]);
    assert.deepEqual(model?.retry, { attempts: 3, baseDelayMs: 200, maxDelayMs: 5000, deadlineMs: 60000 });
    assert.deepEqual(ok.retry, { attempts: 2, baseDelayMs: 200, maxDelayMs: 5000, deadlineMs: 5000 });
    assert.deepEqual(loadConfig({}).retry.attempts, 1, 'no retries unless configured');
    const problems = problemsOf(() =>
      loadConfig({
        GATEWAY_CONFIG: withFile(
          'bad.yaml',
          'upstreams: [{ name: a, base_url: "http://127.0.0.1:1/v1" }]\nmodels:\n  - { id: m, upstream: a, fallbacks: [{ upstream: nope }] }\n',
        ),
      }),
    );
    assert.deepEqual(problems, ['models[0].fallbacks[0].upstream: no upstream named "nope"']);
    assert.equal(
      problemsOf(() => loadConfig({ GATEWAY_CONFIG: withFile('x.yaml', 'models:\n  - { id: m }\n') })).some((p) =>
        p.includes('give either upstream or targets'),
      ),
      true,
    );
  });

  test('limits are set per model id: a limit under an alias is refused, naming the model it belongs to', () => {
    const yaml =
      'upstreams: [{ name: a, base_url: "http://127.0.0.1:1/v1" }]\nmodels:\n  - { id: m, upstream: a, aliases: [m-latest] }\nlimits:\n  models:\n    m-latest: { concurrent: 1 }\n';
    assert.deepEqual(
      problemsOf(() => loadConfig({ GATEWAY_CONFIG: withFile('alias-limits.yaml', yaml) })),
      ['limits.models.m-latest: "m-latest" is an alias of "m"; set the limits under the model id (aliases share them)'],
    );
  });

  test('WORKERS: a number from 1 to 64 or "auto" (one per usable core); the file\'s server.workers otherwise', () => {
    assert.equal(loadConfig({ WORKERS: '3' }).workers, 3);
    assert.equal(loadConfig({ WORKERS: 'auto' }).workers, Math.min(64, availableParallelism()));
    assert.equal(loadConfig({ GATEWAY_CONFIG: withFile('w.yaml', 'server:\n  workers: 2\n') }).workers, 2);
    assert.equal(
      loadConfig({ GATEWAY_CONFIG: withFile('w.yaml', 'server:\n  workers: 2\n'), WORKERS: '4' }).workers,
      4,
      'env wins',
    );
    for (const bad of ['0', '65', 'many', '-1', '2.5']) {
      assert.deepEqual(
        problemsOf(() => loadConfig({ WORKERS: bad })),
        [`WORKERS: must be "auto" or a whole number from 1 to 64 (got "${bad}")`],
      );
    }
    assert.equal(
      problemsOf(() => loadConfig({ GATEWAY_CONFIG: withFile('w.yaml', 'server:\n  workers: 0\n') })).length,
      1,
    );
  });

  test('UPSTREAM_BASE_URL alone configures one default upstream with env timeouts', () => {
    const config = loadConfig({
      UPSTREAM_BASE_URL: 'http://127.0.0.1:11434/v1/',
      UPSTREAM_API_KEY: 'sk-x',
      UPSTREAM_IDLE_TIMEOUT_MS: '1234',
    });
    assert.equal(config.defaultUpstream, 'default');
    assert.equal(config.upstreams[0]?.baseUrl, 'http://127.0.0.1:11434/v1');
    assert.equal(config.upstreams[0]?.apiKey, 'sk-x');
    assert.deepEqual(config.upstreams[0]?.timeouts, { ...DEFAULT_TIMEOUTS, idleMs: 1234 });
  });

  test('a YAML file with per-environment sections; the prod section replaces the top-level one in prod', () => {
    const path = withFile(
      'gw.yaml',
      [
        'timeouts: { connect_ms: 1000 }',
        'upstreams:',
        '  - { name: local, base_url: "http://127.0.0.1:8000/v1" }',
        'environments:',
        '  prod:',
        '    upstreams:',
        '      - name: openai',
        '        base_url: https://api.openai.com/v1',
        '        api_key_env: OPENAI_KEY_PROD',
        '        timeouts: { total_ms: 90000 }',
        '    models:',
        '      - { id: fast, upstream: openai, upstream_model: gpt-4o-mini, context_window: 128000 }',
        '    default_upstream: openai',
      ].join('\n'),
    );
    const dev = loadConfig({ GATEWAY_CONFIG: path });
    assert.deepEqual(
      dev.upstreams.map((u) => u.name),
      ['local'],
    );
    assert.equal(dev.upstreams[0]?.timeouts.connectMs, 1000);
    const prod = loadConfig({
      GATEWAY_CONFIG: path,
      GATEWAY_ENV: 'prod',
      OPENAI_KEY_PROD: 'sk-prod',
      ADMIN_TOKEN: 'prod-admin-token-1234567',
    });
    assert.deepEqual(
      prod.upstreams.map((u) => u.name),
      ['openai'],
    );
    assert.equal(prod.upstreams[0]?.apiKey, 'sk-prod');
    assert.deepEqual(prod.upstreams[0]?.timeouts, { ...DEFAULT_TIMEOUTS, connectMs: 1000, totalMs: 90000 });
    assert.equal(prod.models[0]?.upstreamModel, 'gpt-4o-mini');
    assert.equal(prod.defaultUpstream, 'openai');
    assert.equal(prod.devEchoModel, false, 'never in prod');
  });

  test('a key file next to the config file is read and trimmed', () => {
    const path = withFile(
      'gw.json',
      JSON.stringify({ upstreams: [{ name: 'a', base_url: 'http://127.0.0.1:1/v1', api_key_file: 'key.txt' }] }),
    );
    writeFileSync(join(path, '..', 'key.txt'), 'sk-from-file\n');
    assert.equal(loadConfig({ GATEWAY_CONFIG: path }).upstreams[0]?.apiKey, 'sk-from-file');
  });

  test('every problem is reported at once, each naming its field', () => {
    const path = withFile(
      'bad.yaml',
      [
        'upstreams:',
        '  - { name: "Bad Name", base_url: "ftp://x" }',
        '  - { name: ok, base_url: "http://127.0.0.1:1/v1", api_key: "sk-literal-secret" }',
        'models:',
        '  - { id: m, upstream: missing }',
        'surprise: 1',
      ].join('\n'),
    );
    const problems = problemsOf(() => loadConfig({ GATEWAY_CONFIG: path }));
    const text = problems.join('\n');
    assert.match(text, /upstreams\[0\]\.name/);
    assert.match(text, /upstreams\[0\]\.base_url/);
    assert.match(text, /upstreams\[1\]\.api_key: secrets do not belong in the config file/);
    assert.match(text, /\(root\): .*surprise/);
    assert.ok(!text.includes('sk-literal-secret'));
  });

  test('references and env values are checked', () => {
    const path = withFile(
      'refs.yaml',
      'upstreams:\n  - { name: a, base_url: "http://127.0.0.1:1/v1", api_key_env: NOT_SET_ANYWHERE }\nmodels:\n  - { id: m, upstream: b }\ndefault_upstream: c\n',
    );
    const problems = problemsOf(() => loadConfig({ GATEWAY_CONFIG: path, GATEWAY_ENV: 'qa', PORT: 'eighty' }));
    const text = problems.join('\n');
    assert.match(text, /GATEWAY_ENV: must be one of dev, staging, prod/);
    assert.match(text, /PORT: must be a whole number/);
    assert.match(text, /upstreams\[0\]\.api_key_env: environment variable NOT_SET_ANYWHERE is not set/);
    assert.match(text, /models\[0\]\.upstream: no upstream named "b"/);
    assert.match(text, /default_upstream: no upstream named "c"/);
  });

  test('Basic users and OAuth are checked too: a plain password, a missing hash, a clear-text JWKS URL', () => {
    const path = withFile(
      'auth.yaml',
      [
        'auth:',
        '  basic_users:',
        '    - { username: alice, password_hash_env: ALICE_HASH, routes: [chat] }',
        '    - { username: bob, routes: [chat] }',
        '  oauth: { issuer: "https://idp.example", audience: gw, jwks_url: "http://idp.example/jwks" }',
      ].join('\n'),
    );
    const text = problemsOf(() => loadConfig({ GATEWAY_CONFIG: path, ALICE_HASH: 'hunter2' })).join('\n');
    assert.match(text, /auth\.basic_users\[0\]: the password hash is not a scrypt\$\.\.\. hash/);
    assert.match(text, /auth\.basic_users\[1\]: give password_hash_env or password_hash_file/);
    assert.match(text, /auth\.oauth\.jwks_url: must be https:\/\//);
    assert.ok(!text.includes('hunter2'), 'the bad value itself is not repeated');
  });

  test('every secret reference resolves the same way: an unset variable or an unreadable file is a problem at its field', () => {
    const path = withFile(
      'refs.yaml',
      [
        'upstreams:',
        '  - { name: a, base_url: "https://a.example/v1", api_key_env: A_KEY }',
        '  - { name: b, base_url: "https://b.example/v1", api_key_file: ./missing-key }',
        'auth:',
        '  basic_users:',
        '    - { username: carol, password_hash_env: CAROL_HASH, routes: [chat] }',
        '    - { username: dave, password_hash_file: ./missing-hash, routes: [chat] }',
        'webhooks:',
        '  subscriptions:',
        '    - { id: s, url: "https://hooks.example/in", events: [chat.completed], secrets: [{ env: HOOK_SECRET }, { file: ./missing-secret }] }',
      ].join('\n'),
    );
    const text = problemsOf(() => loadConfig({ GATEWAY_ENV: 'dev', GATEWAY_CONFIG: path })).join('\n');
    assert.match(text, /upstreams\[0\]\.api_key_env: environment variable A_KEY is not set/);
    assert.match(text, /upstreams\[1\]\.api_key_file: cannot read \.\/missing-key/);
    // An unset hash variable used to leave a user who could never sign in, silently.
    assert.match(text, /auth\.basic_users\[0\]\.password_hash_env: environment variable CAROL_HASH is not set/);
    assert.match(text, /auth\.basic_users\[1\]\.password_hash_file: cannot read \.\/missing-hash/);
    assert.match(text, /webhooks\.subscriptions\[0\]\.secrets\[0\]\.env: environment variable HOOK_SECRET is not set/);
    assert.match(text, /webhooks\.subscriptions\[0\]\.secrets\[1\]\.file: cannot read \.\/missing-secret/);
  });

  test('the environment upstream is built like a file entry: the schema defaults and the key by reference', () => {
    const config = loadConfig({
      UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1/',
      UPSTREAM_API_KEY: 'sk-env-upstream-key',
      UPSTREAM_MAX_CONCURRENT: '7',
    });
    const upstream = config.upstreams.find((u) => u.name === 'default');
    assert.deepEqual(
      {
        baseUrl: upstream?.baseUrl,
        apiKey: upstream?.apiKey,
        maxConcurrent: upstream?.maxConcurrent,
        queueTimeoutMs: upstream?.queueTimeoutMs,
        healthCheck: upstream?.healthCheck,
        defaultMaxTokens: upstream?.defaultMaxTokens,
        streamUsage: upstream?.streamUsage,
      },
      {
        baseUrl: 'http://127.0.0.1:9/v1',
        apiKey: 'sk-env-upstream-key',
        maxConcurrent: 7,
        queueTimeoutMs: 1000,
        healthCheck: 'models',
        defaultMaxTokens: 4096,
        streamUsage: 'auto',
      },
    );
    assert.deepEqual(upstream?.timeouts, DEFAULT_TIMEOUTS);
    assert.equal(
      loadConfig({ UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1' }).upstreams[0]?.apiKey,
      undefined,
      'no key: none sent',
    );
  });

  test('unreadable or unparsable files are named', () => {
    assert.match(problemsOf(() => loadConfig({ GATEWAY_CONFIG: '/nonexistent/gw.yaml' })).join(), /cannot read/);
    const path = withFile('broken.json', '{"upstreams": [');
    assert.match(problemsOf(() => loadConfig({ GATEWAY_CONFIG: path })).join(), /not valid JSON/);
  });

  test('outside dev an admin token is required, and a short one is refused', () => {
    assert.match(
      problemsOf(() => loadConfig({ GATEWAY_ENV: 'prod' })).join(),
      /ADMIN_TOKEN: required when GATEWAY_ENV=prod/,
    );
    assert.match(
      problemsOf(() => loadConfig({ GATEWAY_ENV: 'staging', ADMIN_TOKEN: 'long-enough-token-1,short' })).join(),
      /at least 16 characters/,
    );
    const both = problemsOf(() => loadConfig({ GATEWAY_ENV: 'prod', UPSTREAM_BASE_URL: 'ftp://user:sk-in-url@host' }));
    assert.equal(both.length, 2, 'all problems at once');
    assert.ok(!both.join().includes('sk-in-url'), 'a bad URL is not echoed');
    assert.equal(loadConfig({ GATEWAY_ENV: 'dev', ADMIN_TOKEN: 'short' }).adminTokens[0], 'short');
  });

  test('ADMIN_TOKEN holds comma-separated tokens', () => {
    assert.deepEqual(parseAdminTokens(' a-token , b-token,,'), ['a-token', 'b-token']);
    assert.deepEqual(parseAdminTokens(undefined), []);
  });
});
