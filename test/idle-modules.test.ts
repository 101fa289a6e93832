/**
 * Issue 33, the idle footprint: a gateway started with the default configuration does not load the modules
 * only some configurations use (the YAML parser, jose for OAuth, OpenTelemetry's SDK and exporter, the
 * PostgreSQL and Redis drivers). The real process (`node --import tsx src/main.ts`) records every module it
 * resolves through a preload passed in NODE_OPTIONS, and writes the list when it exits.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { removeTempDirs, startGatewayProcess } from './helpers/spawn-gateway.js';

const PRELOAD = `import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const seen = new Set();
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.add(r.url); return r; } });
process.on('exit', () => writeFileSync(process.env.MODULE_LIST_DIR + '/' + process.pid, [...seen].join('\\n')));
`;

after(removeTempDirs);

test('the default configuration loads no YAML parser, jose, OpenTelemetry SDK, pg or ioredis at start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-modules-'));
  writeFileSync(join(dir, 'preload.mjs'), PRELOAD);
  const gw = await startGatewayProcess({
    env: { NODE_OPTIONS: `--import ${join(dir, 'preload.mjs')}`, MODULE_LIST_DIR: dir },
  });
  try {
    gw.signal('SIGTERM');
    assert.equal((await gw.waitForExit(10_000)).code, 0);
  } finally {
    await gw.kill();
  }
  const lists = readdirSync(dir).filter((name) => /^\d+$/.test(name));
  assert.ok(lists.length >= 1, 'the preload wrote its list');
  const loaded = lists.flatMap((name) => readFileSync(join(dir, name), 'utf8').split('\n'));
  assert.ok(
    loaded.some((url) => url.includes('/node_modules/fastify/')),
    'the list holds the server modules',
  );
  const unused = [
    'yaml',
    'jose',
    'pg',
    'ioredis',
    '@opentelemetry/sdk-trace-base',
    '@opentelemetry/exporter-trace-otlp-http',
  ];
  for (const name of unused) {
    assert.deepEqual(
      loaded.filter((url) => url.includes(`/node_modules/${name}/`)),
      [],
      `${name} is not loaded`,
    );
  }
});
