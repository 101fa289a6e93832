/**
 * undici's Pool and Agent come from its internal modules (src/net/undici.ts): undici is pinned exactly, and the
 * server checks the layout at start, failing with an error that names the installed version and the one expected.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type * as Undici from 'undici';
import { UNDICI_VERSION, loadUndiciDispatchers, type UndiciLoader } from '../../src/net/undici.js';
import { PROJECT_ROOT, makeTempDir, removeTempDirs, spawnGateway } from '../helpers/spawn-gateway.js';

after(removeTempDirs);

const require = createRequire(import.meta.url);

test('undici is pinned exactly, to the version whose layout src/net/undici.ts was written for', () => {
  const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  assert.equal(pkg.dependencies.undici, UNDICI_VERSION);
  assert.equal((require('undici/package.json') as { version: string }).version, UNDICI_VERSION);
});

test('the installed undici passes the check: Pool and Agent carry the request methods of its index', () => {
  const { Pool, Agent } = loadUndiciDispatchers();
  const index = require('undici') as typeof Undici;
  assert.equal(Pool, index.Pool);
  assert.equal(Agent, index.Agent);
  for (const name of ['request', 'stream', 'pipeline', 'upgrade', 'connect'] as const)
    assert.equal(typeof Pool.prototype[name], 'function', name);
});

/** A fake undici: the real modules, except those `changes` replace (a function that throws: the file is gone). */
function fakeUndici(version: string, changes: Record<string, unknown>): UndiciLoader {
  return (path) => {
    if (path === 'package.json') return { version };
    if (!(path in changes)) return require(`undici/${path}`);
    const changed = changes[path];
    if (typeof changed === 'function' && !('prototype' in changed)) return (changed as () => unknown)();
    return changed;
  };
}

test('a different layout fails with the installed version, the expected one and what differs', () => {
  class FakeDispatcher {}
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    [
      'an API module without request',
      { 'lib/api/index.js': { stream() {}, pipeline() {}, upgrade() {}, connect() {} } },
      /undici\/lib\/api\/index\.js does not export request\b/,
    ],
    [
      'a moved Pool',
      {
        'lib/dispatcher/pool.js': () => {
          throw new Error("Cannot find module 'undici/lib/dispatcher/pool.js'\nRequire stack: ...");
        },
      },
      /cannot load undici\/lib\/dispatcher\/pool\.js \(Cannot find module 'undici\/lib\/dispatcher\/pool\.js'\)/,
    ],
    [
      'a Pool that is not a Dispatcher',
      { 'lib/dispatcher/dispatcher.js': FakeDispatcher },
      /undici\/lib\/dispatcher\/pool\.js does not export a Pool that extends Dispatcher/,
    ],
    [
      'no Dispatcher class',
      { 'lib/dispatcher/dispatcher.js': {} },
      /undici\/lib\/dispatcher\/dispatcher\.js does not export the Dispatcher class/,
    ],
  ];
  for (const [name, changes, what] of cases) {
    assert.throws(
      () => loadUndiciDispatchers(fakeUndici('7.99.0', changes)),
      (error: Error) => {
        assert.ok(
          error.message.startsWith(
            `undici 7.99.0 is installed (src/net/undici.ts expects the internal modules of undici ${UNDICI_VERSION}): `,
          ),
          error.message,
        );
        assert.match(error.message, what);
        assert.ok(
          error.message.endsWith(`Install undici ${UNDICI_VERSION} (npm ci), or update src/net/undici.ts for 7.99.0.`),
        );
        return true;
      },
      name,
    );
  }
  // Nothing was patched on the way to a failure.
  assert.equal('request' in FakeDispatcher.prototype, false);
});

test('a gateway whose undici has another layout stops at start with that message, before serving', async () => {
  // The real process, its undici's API module replaced through a resolve hook: the layout of a future release.
  const dir = makeTempDir('gw-undici-');
  writeFileSync(join(dir, 'api.cjs'), 'module.exports = { stream() {} };');
  const preload = join(dir, 'preload.mjs');
  writeFileSync(
    preload,
    `import { registerHooks } from 'node:module';
registerHooks({ resolve(specifier, context, next) {
  if (specifier === 'undici/lib/api/index.js') return { url: new URL('./api.cjs', import.meta.url).href, shortCircuit: true };
  return next(specifier, context);
} });
`,
  );
  const gw = await spawnGateway({ env: { NODE_OPTIONS: `--import ${preload}` } });
  try {
    const exit = await gw.waitForExit(20_000);
    assert.equal(exit.code, 1);
    assert.match(
      gw.stderr(),
      new RegExp(
        `gateway: failed to start: Error: undici ${UNDICI_VERSION.replace(/\./g, '\\.')} is installed \\(src/net/undici\\.ts ` +
          `expects the internal modules of undici .*\\): undici/lib/api/index\\.js does not export request, pipeline, upgrade, connect\\.`,
      ),
    );
    assert.doesNotMatch(gw.stdout(), /gateway started/);
  } finally {
    await gw.kill();
  }
});
