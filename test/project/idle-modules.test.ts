/**
 * Issue 33, the idle footprint: a gateway started with the default configuration does not load the modules
 * only some configurations use (the YAML parser, jose for OAuth, OpenTelemetry's SDK and exporter, the
 * PostgreSQL and Redis drivers); with WORKERS=2 the primary loads none of the server's modules nor zod (a child
 * process validates the config) and the workers take the primary's config instead of validating it again. The
 * real processes (`node --import tsx src/main.ts`) record every module they resolve through a preload passed in
 * NODE_OPTIONS, and write the list, named by their role, when they exit.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { removeTempDirs, spawnGateway, startGatewayProcess, type GatewayProcess } from '../helpers/spawn-gateway.js';
import { waitFor } from '../helpers/wait.js';

const PRELOAD = `import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
import cluster from 'node:cluster';
const seen = new Set();
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.add(r.url); return r; } });
const role = cluster.isWorker ? 'worker' : process.send ? 'child' : 'main';
process.on('exit', () => writeFileSync(process.env.MODULE_LIST_DIR + '/' + role + '-' + process.pid, [...seen].join('\\n')));
`;

after(removeTempDirs);

test('the default configuration loads no YAML parser, jose, OpenTelemetry SDK, pg, ioredis or undici index at start', async () => {
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
  const loaded = modulesOf(dir, 'main');
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
  // undici's dispatchers come from its own modules (src/net/undici.ts): its index, fetch, WebSocket and the
  // mock agents are not loaded.
  for (const part of ['undici/index.js', 'undici/lib/web/', 'undici/lib/mock/'])
    assert.deepEqual(
      loaded.filter((url) => url.includes(`/node_modules/${part}`)),
      [],
      `${part} is not loaded`,
    );
  assert.ok(
    loaded.some((url) => url.includes('/node_modules/undici/lib/dispatcher/pool.js')),
    "undici's Pool is",
  );
  for (const name of unused) {
    assert.deepEqual(
      loaded.filter((url) => url.includes(`/node_modules/${name}/`)),
      [],
      `${name} is not loaded`,
    );
  }
});

/** The modules every process of `role` resolved (`main`: the process started, `worker`, `child`). */
function modulesOf(dir: string, role: string): string[] {
  const lists = readdirSync(dir).filter((name) => name.startsWith(`${role}-`));
  assert.ok(lists.length >= 1, `the preload wrote the list of a ${role} process`);
  return lists.flatMap((name) => readFileSync(join(dir, name), 'utf8').split('\n'));
}

const fromPackage = (loaded: string[], name: string) => loaded.filter((url) => url.includes(`/node_modules/${name}/`));

test('WORKERS=2: the primary loads no zod, Fastify, undici, prom-client or node:sqlite; the workers no zod', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-modules-'));
  writeFileSync(join(dir, 'preload.mjs'), PRELOAD);
  const gw = await startGatewayProcess({
    env: { NODE_OPTIONS: `--import ${join(dir, 'preload.mjs')}`, MODULE_LIST_DIR: dir, WORKERS: '2' },
  });
  try {
    await waitFor('both workers to start', () => gw.stdout().split('"gateway started"').length === 3, 20_000);
    gw.signal('SIGTERM');
    assert.equal((await gw.waitForExit(15_000)).code, 0);
  } finally {
    await gw.kill();
  }
  const primary = modulesOf(dir, 'main');
  for (const name of ['zod', 'fastify', 'undici', 'prom-client', 'ajv'])
    assert.deepEqual(fromPackage(primary, name), [], `the primary loads no ${name}`);
  assert.ok(!primary.includes('node:sqlite'), 'the primary loads no node:sqlite');
  const workers = readdirSync(dir).filter((name) => name.startsWith('worker-'));
  assert.equal(workers.length, 2, 'both workers wrote their list');
  const worker = modulesOf(dir, 'worker');
  assert.ok(fromPackage(worker, 'fastify').length > 0, 'a worker serves');
  assert.deepEqual(fromPackage(worker, 'zod'), [], 'a worker does not validate the config again');
  // The config was validated, by the child, with the schema.
  assert.ok(fromPackage(modulesOf(dir, 'child'), 'zod').length > 0, 'the config child validates with zod');
});

test('WORKERS=2: a bad configuration fails start-up with the message and exit code of a single process', async () => {
  const exitOf = async (workers: string): Promise<{ code: number | null; stderr: string; stdout: string }> => {
    const gw: GatewayProcess = await spawnGateway({
      env: { WORKERS: workers, BODY_LIMIT_BYTES: '12', GATEWAY_ENV: 'prod', ADMIN_TOKEN: undefined },
    });
    try {
      const { code } = await gw.waitForExit(15_000);
      return { code, stderr: gw.stderr(), stdout: gw.stdout() };
    } finally {
      await gw.kill();
    }
  };
  const single = await exitOf('1');
  const cluster = await exitOf('2');
  assert.equal(single.code, 1);
  assert.match(single.stderr, /^gateway: invalid configuration:\n {2}- /);
  assert.match(single.stderr, /BODY_LIMIT_BYTES/);
  assert.match(single.stderr, /ADMIN_TOKEN/);
  assert.deepEqual(cluster, single);
});
