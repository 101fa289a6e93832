/**
 * Health without the admin token (issue 41): the status and each check's status only. The config file's path, the
 * problems of a refused reload (which may name a secret pasted as a key in the wrong place), the pid, latencies and
 * versions are the admin's: shown with the admin token only; the answer varies by Authorization.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import {
  HEALTH_PATH,
  bearer,
  httpCall,
  jsonOf,
  killAllGateways,
  logLines,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
} from '../../helpers/spawn-gateway.js';
import { waitFor } from '../../helpers/wait.js';

const TOKEN = 'health-view-admin-token-0123456789';
/** What an operator pasted as a key name: it must never reach an answer without the admin token. */
const PASTED = 'sk_live_pasted_by_mistake_4242';

after(async () => {
  await killAllGateways();
  removeTempDirs();
});

describe('health: the public view and the admin view', () => {
  let mock: OpenAiUpstream;
  let gw: GatewayProcess;
  let file: string;

  before(async () => {
    mock = await startOpenAiUpstream();
    file = join(makeTempDir('gw-health-'), 'gateway.json');
    const good = { upstreams: [{ name: 'up', base_url: mock.baseUrl }], models: [{ id: 'm', upstream: 'up' }] };
    writeFileSync(file, JSON.stringify(good));
    gw = await startGatewayProcess({
      env: { GATEWAY_ENV: 'prod', ADMIN_TOKEN: TOKEN, GATEWAY_CONFIG: file, LOG_LEVEL: 'info' },
    });
    // A reload refused for an unknown key: health's admin view names the file and the key.
    writeFileSync(`${file}.next`, JSON.stringify({ ...good, [PASTED]: true }));
    renameSync(`${file}.next`, file);
    await waitFor('the reload refused', () =>
      logLines(gw.stdout()).some((l) => String(l.msg).startsWith('config reload refused')),
    );
  });
  after(async () => {
    await gw.kill();
    await mock.close();
  });

  test('without a token, with a wrong one or another scheme: status and checks only, nothing else', async () => {
    for (const headers of [{}, bearer('not-the-admin-token-at-all'), { authorization: 'Basic YTpi' }]) {
      const answer = await httpCall(`${gw.url}${HEALTH_PATH}`, { headers });
      assert.equal(answer.status, 200);
      assert.match(String(answer.headers.vary), /authorization/i);
      assert.equal(answer.headers['cache-control'], 'no-store');
      const body = jsonOf(answer);
      assert.deepEqual(Object.keys(body).sort(), ['checks', 'status', 'time']);
      assert.deepEqual(body.checks, { store: { status: 'ok' }, upstreams: { up: { status: 'ok' } } });
      for (const secret of [PASTED, file, String(gw.child.pid), 'gateway.json'])
        assert.ok(!answer.text.includes(secret), `the public view shows ${secret}`);
    }
  });

  test('with the admin token: the whole report (which process, the config file, the refused reload)', async () => {
    const answer = await httpCall(`${gw.url}${HEALTH_PATH}`, { headers: bearer(TOKEN) });
    assert.equal(answer.status, 200);
    assert.match(String(answer.headers.vary), /authorization/i);
    const body = jsonOf(answer) as {
      environment?: string;
      instance?: { pid: number };
      config?: { last_error: { file: string; problems: string[] } | null };
      checks: { store: { kind?: string } };
    };
    assert.equal(body.environment, 'prod');
    assert.equal(body.instance?.pid, gw.child.pid);
    assert.equal(body.checks.store.kind, 'sqlite');
    assert.equal(body.config?.last_error?.file, file);
    assert.ok(body.config?.last_error?.problems.some((p) => p.includes(PASTED)));
  });
});
