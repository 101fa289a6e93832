/**
 * A storm of reload triggers (issue 41, adversarial pass): a hundred SIGHUPs, or a hundred file events, cost two
 * reads of the config (one running, one waiting that the others join), not a reader thread, an audit line and a
 * `config.reloaded` event each; the TLS pair likewise. The last trigger's change is still applied.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { openDependencies } from '../../src/dependencies.js';
import { CertificateReloader } from '../../src/http/tls-certificate.js';
import { createLogger } from '../../src/observability/logger.js';
import { ADMIN_TOKEN } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-storm-'));
  dirs.push(dir);
  return dir;
}

const configText = (models: string[]) =>
  JSON.stringify({
    upstreams: [{ name: 'up', base_url: 'http://127.0.0.1:9/v1', api_key_env: 'STORM_KEY', health_check: 'none' }],
    models: models.map((id) => ({ id, upstream: 'up' })),
  });

test('a hundred SIGHUPs at once: one read and one audit line; the next trigger reads again and applies a change', async () => {
  const dir = tempDir();
  const file = join(dir, 'gateway.json');
  writeFileSync(file, configText(['m']));
  const env = {
    GATEWAY_ENV: 'dev',
    ADMIN_TOKEN,
    DATA_DIR: dir,
    GATEWAY_CONFIG: file,
    LOG_LEVEL: 'info',
    STORM_KEY: 'sk-storm',
  };
  const config = loadConfig(env, { version: '0.0.0-test' });
  const lines: string[] = [];
  const logger = createLogger({
    level: 'info',
    secrets: [ADMIN_TOKEN],
    destination: { write: (l: string) => void lines.push(l) },
  });
  const deps = await openDependencies(config, logger);
  let reads = 0;
  const gateway = await buildApp({
    ...deps,
    readConfig: () => {
      reads++;
      return loadConfig(env, { version: '0.0.0-test' });
    },
  });
  await gateway.app.listen({ host: '127.0.0.1', port: 0 });
  const audits = () => lines.filter((l) => l.includes('"audit":"config.reloaded"')).length;
  try {
    // The file is left as it is (a SIGHUP reloads all the same), so no file event adds a read of its own.
    const storm = Array.from({ length: 100 }, () => gateway.reloadConfig('SIGHUP'));
    await waitFor('the first reload of the storm', () => audits() >= 1, 10_000);
    await Promise.all(storm);
    // One more trigger, after the storm: on a queue of one reload per signal it would still be behind the others.
    await gateway.reloadConfig('SIGHUP');
    assert.ok(reads <= 2, `${reads} reads of the config for 101 SIGHUPs`);
    assert.equal(audits(), reads, 'one config.reloaded line per read');
    // A change still applies at the next trigger.
    writeFileSync(file, configText(['m', 'after-storm']));
    await Promise.all(Array.from({ length: 10 }, () => gateway.reloadConfig('SIGHUP')));
    const models = await call(`http://127.0.0.1:${(gateway.app.server.address() as { port: number }).port}/v1/models`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.match(models.text, /after-storm/);
  } finally {
    await gateway.app.close();
    await deps.close();
  }
});

test('a hundred certificate reloads at once read the pair once and install it once', async () => {
  const dir = tempDir();
  const certFile = join(dir, 'server.crt');
  const keyFile = join(dir, 'server.key');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  const server = createHttpsServer({ key: '', cert: '' });
  const installed: string[] = [];
  const reloader = new CertificateReloader(
    server,
    { certFile, keyFile },
    {
      info: (_fields, msg) => void installed.push(msg),
      warn: (_fields, msg) => void installed.push(msg),
    },
  );
  const storm = await Promise.all(Array.from({ length: 100 }, () => reloader.reload()));
  assert.ok(storm.every(Boolean), 'every caller learns the pair is in use');
  assert.deepEqual(installed, ['TLS certificate reloaded']);
  assert.equal(await reloader.reload(), true);
  assert.equal(installed.length, 2);
  server.close();
});
