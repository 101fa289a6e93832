/**
 * Live reload of the config file (issue 35, docs/config.md "Live reload") on the real process: the file is edited
 * the way editors do (a new file renamed over the old), the gateway notices it (directory watch, stat poll) or is
 * sent SIGHUP, and new calls use the new configuration while calls already running finish on theirs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import {
  CHAT_PATH,
  HEALTH_PATH,
  bearer,
  chatRequestBody,
  httpCall,
  jsonOf,
  killAllGateways,
  logLines,
  makeTempDir,
  removeTempDirs,
  sseData,
  startGatewayProcess,
  streamingCall,
  type GatewayProcess,
} from '../helpers/spawn-gateway.js';
import { waitFor, waitForValue } from '../helpers/wait.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

const TOKEN = 'config-reload-admin-token-0123456789';
const JSON_HEADERS = bearer(TOKEN, { 'content-type': 'application/json' });

after(async () => {
  await killAllGateways();
  removeTempDirs();
});

interface Upstream {
  name: string;
  base_url: string;
}

/** A config file in the gateway's schema: upstreams, models (with a price), limits and any other section. */
function configText(upstreams: Upstream[], models: Array<Record<string, unknown>>, extra: object = {}): string {
  return JSON.stringify({
    upstreams,
    models,
    circuit_breaker: { failure_threshold: 2, cooldown_seconds: 600 },
    ...extra,
  });
}

/** Writes the file as editors do: a new file, renamed over the old one (a new inode). */
function replaceFile(path: string, text: string): void {
  const temporary = `${path}.tmp-${Date.now()}`;
  writeFileSync(temporary, text);
  renameSync(temporary, path);
}

const chat = (gw: GatewayProcess, model: string) =>
  httpCall(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: JSON_HEADERS, body: chatRequestBody(model, false) });

// The admin's view of health: the config and instance fields are not in the public one.
const health = async (gw: GatewayProcess) =>
  jsonOf(await httpCall(`${gw.url}${HEALTH_PATH}`, { headers: bearer(TOKEN) }));

function configOf(report: Record<string, unknown>) {
  return report.config as {
    version: string;
    loaded_at: string;
    last_error: { file: string; problems: string[] } | null;
  };
}

const reloaded = (gw: GatewayProcess) => logLines(gw.stdout()).filter((l) => l.audit === 'config.reloaded');

/** Waits for the n-th applied reload's audit line and returns it. */
async function nthReload(gw: GatewayProcess, n: number): Promise<Record<string, unknown>> {
  await waitFor(`reload ${n} applied`, () => reloaded(gw).length >= n, 10_000);
  return reloaded(gw)[n - 1] as Record<string, unknown>;
}

function accessLine(gw: GatewayProcess, requestId: string): Record<string, unknown> | undefined {
  return logLines(gw.stdout()).find((l) => l.request_id === requestId && l.route === 'chat');
}

describe('config reload, one process', () => {
  let a: OpenAiUpstream;
  let b: OpenAiUpstream;
  let c: OpenAiUpstream;
  let gw: GatewayProcess;
  let file: string;
  let reloads = 0;
  const models = (price: number, extra: Array<Record<string, unknown>> = []) => [
    { id: 'm1', upstream: 'a', upstream_model: 'up-m1', pricing: { input_per_million: price } },
    { id: 'limited', upstream: 'a' },
    { id: 'flaky', upstream: 'c' },
    ...extra,
  ];
  let upstreams: Upstream[];
  const limits = { models: { limited: { requests: { limit: 2, window_seconds: 600 } } } };

  before(async () => {
    a = await startOpenAiUpstream();
    b = await startOpenAiUpstream();
    c = await startOpenAiUpstream();
    c.defaultBehavior = { kind: 'json', status: 500 };
    upstreams = [
      { name: 'a', base_url: a.baseUrl },
      { name: 'c', base_url: c.baseUrl },
    ];
    file = join(makeTempDir('gw-reload-'), 'gateway.json');
    writeFileSync(file, configText(upstreams, models(100_000, [{ id: 'gone', upstream: 'a' }]), { limits }));
    gw = await startGatewayProcess({
      env: { GATEWAY_ENV: 'prod', ADMIN_TOKEN: TOKEN, GATEWAY_CONFIG: file, LOG_LEVEL: 'info' },
    });
  });
  after(async () => {
    await gw.kill();
    await Promise.all([a.close(), b.close(), c.close()]);
  });

  test('a stream runs across a reload to [DONE]; the removed model is 404 for new calls, the added one answers', async () => {
    a.enqueue({ kind: 'stream', content: ['one', ' two', ' three', ' four', ' five', ' six'], delayMs: 250 });
    const stream = streamingCall(`${gw.url}${CHAT_PATH}`, JSON_HEADERS, chatRequestBody('gone', true));
    assert.equal(await stream.status, 200);
    await stream.firstData;
    const version = configOf(await health(gw)).version;
    replaceFile(file, configText(upstreams, models(100_000, [{ id: 'added', upstream: 'a' }]), { limits }));
    const line = await nthReload(gw, ++reloads);
    assert.deepEqual(line.models_added, ['added']);
    assert.deepEqual(line.models_removed, ['gone']);
    assert.equal(line.trigger, 'file change');

    const refused = await chat(gw, 'gone');
    assert.equal(refused.status, 404, refused.text);
    assert.equal(jsonOf(refused).code, 'model_not_found');
    const added = await chat(gw, 'added');
    assert.equal(added.status, 200, added.text);
    const done = await stream.done;
    assert.equal(done.complete, true, done.error);
    assert.equal(sseData(done.text).at(-1), '[DONE]');
    assert.match(done.text, /six/);
    const now = configOf(await health(gw));
    assert.notEqual(now.version, version);
    assert.equal(now.last_error, null);
  });

  test('a broken file changes nothing and is reported: log line, health, metrics; the next good file applies', async () => {
    const broken = configText([{ name: 'a', base_url: 'ftp://nowhere' }], models(100_000));
    const before = configOf(await health(gw)).version;
    replaceFile(file, broken);
    const refusal = await waitForValue(
      'the refusal line',
      () => logLines(gw.stdout()).find((l) => String(l.msg).startsWith('config reload refused')),
      (l) => l !== undefined,
    );
    assert.equal(refusal?.config_file, file);
    assert.ok(
      (refusal?.problems as string[]).some((p) => p.includes('upstreams[0].base_url')),
      String(refusal?.msg),
    );
    const report = configOf(await health(gw));
    assert.equal(report.version, before, 'the running version stays');
    assert.equal(report.last_error?.file, file);
    assert.ok(report.last_error?.problems.some((p) => p.includes('upstreams[0].base_url')));
    const metrics = await httpCall(`${gw.url}/metrics`, { headers: bearer(TOKEN) });
    assert.match(metrics.text, /^llmgw_config_reload_failures_total 1$/m);
    assert.match(metrics.text, new RegExp(`^llmgw_config_info\\{version="${before}",pid="\\d+"\\} 1$`, 'm'));
    assert.equal((await chat(gw, 'added')).status, 200, 'the running config still serves');

    replaceFile(file, configText(upstreams, models(100_000, [{ id: 'added', upstream: 'a' }]), { limits, x: 1 }));
    // An unknown key is refused too (strict schema): still the same version, a second failure.
    await waitForValue(
      'the second refusal',
      async () => configOf(await health(gw)).last_error?.problems ?? [],
      (problems) => problems.some((p) => p.includes('(x)')),
    );
    assert.equal(configOf(await health(gw)).version, before);
    replaceFile(file, configText(upstreams, models(100_000, [{ id: 'added', upstream: 'a' }]), { limits }));
    await waitForValue(
      'the good file applied',
      async () => configOf(await health(gw)).last_error,
      (e) => e === null,
    );
    reloads = reloaded(gw).length;
  });

  test('a changed price applies to the next call; an upstream moved to another base URL gets the next call, while a stream on the old one finishes', async () => {
    a.enqueue({ kind: 'stream', content: ['old', ' pool', ' keeps', ' going', ' to', ' the', ' end'], delayMs: 200 });
    const onOld = streamingCall(`${gw.url}${CHAT_PATH}`, JSON_HEADERS, chatRequestBody('added', true));
    assert.equal(await onOld.status, 200);
    await onOld.firstData;
    const first = await chat(gw, 'm1');
    assert.equal(first.status, 200, first.text);
    const id1 = String(first.headers['x-request-id']);
    const cost1 = await waitForValue(
      'the first access line',
      () => accessLine(gw, id1),
      (l) => l !== undefined,
    );
    replaceFile(
      file,
      configText(
        [{ name: 'a', base_url: b.baseUrl }, upstreams[1] as Upstream],
        models(300_000, [{ id: 'added', upstream: 'a' }]),
        { limits },
      ),
    );
    const line = await nthReload(gw, ++reloads);
    assert.equal(line.prices_changed, true);
    assert.deepEqual(line.upstreams_changed, [{ name: 'a', fields: ['base_url'] }]);
    const before = { a: a.chatRequests().length, b: b.chatRequests().length };
    const second = await chat(gw, 'm1');
    assert.equal(second.status, 200, second.text);
    assert.equal(a.chatRequests().length, before.a, 'the old base URL got nothing');
    assert.equal(b.chatRequests().length, before.b + 1, 'the new base URL got the call');
    const id2 = String(second.headers['x-request-id']);
    const cost2 = await waitForValue(
      'the second access line',
      () => accessLine(gw, id2),
      (l) => l !== undefined,
    );
    assert.equal(cost2?.prompt_tokens, cost1?.prompt_tokens);
    assert.ok(Number(cost1?.cost_usd) > 0);
    assert.ok(
      Math.abs(Number(cost2?.cost_usd) - Number(cost1?.cost_usd) * 3) < 1e-9,
      `three times the price: ${String(cost1?.cost_usd)} then ${String(cost2?.cost_usd)}`,
    );
    upstreams = [{ name: 'a', base_url: b.baseUrl }, upstreams[1] as Upstream];
    // The old pool was retired while this stream ran on it: it was let finish.
    const done = await onOld.done;
    assert.equal(done.complete, true, done.error);
    assert.equal(sseData(done.text).at(-1), '[DONE]');
    assert.match(done.text, / end/);
  });

  test('the circuit and limiter windows of a kept upstream and model survive a reload', async () => {
    for (let i = 0; i < 2; i++) assert.equal((await chat(gw, 'flaky')).status, 502);
    const open = await chat(gw, 'flaky');
    assert.equal(open.status, 503, open.text);
    assert.equal((await chat(gw, 'limited')).status, 200);
    assert.equal((await chat(gw, 'limited')).status, 200);
    assert.equal((await chat(gw, 'limited')).status, 429);
    replaceFile(file, configText(upstreams, models(500_000, [{ id: 'added', upstream: 'a' }]), { limits }));
    await nthReload(gw, ++reloads);
    const checks = (await health(gw)).checks as { upstreams: Record<string, { circuit?: string }> };
    assert.equal(checks.upstreams.c?.circuit, 'open');
    const still = await chat(gw, 'flaky');
    assert.equal(still.status, 503, still.text);
    assert.equal((await chat(gw, 'limited')).status, 429, 'the window was kept');
  });

  test('a restart-only setting is named in the log and keeps its running value; SIGHUP reloads', async () => {
    replaceFile(
      file,
      configText(upstreams, models(500_000, [{ id: 'added', upstream: 'a' }]), { limits, metrics: { enabled: false } }),
    );
    const warning = await waitForValue(
      'the restart-only line',
      () => logLines(gw.stdout()).find((l) => Array.isArray(l.settings)),
      (l) => l !== undefined,
    );
    assert.deepEqual(warning?.settings, ['metrics.enabled']);
    await nthReload(gw, ++reloads);
    assert.equal((await httpCall(`${gw.url}/metrics`, { headers: bearer(TOKEN) })).status, 200, 'metrics stay on');
    gw.signal('SIGHUP');
    const line = await nthReload(gw, ++reloads);
    assert.equal(line.trigger, 'SIGHUP');
    assert.deepEqual(line.models_added, []);
    assert.ok(reloaded(gw).length >= reloads);
  });

  test('the dashboard switch applies live: off answers 404 like any unknown path, on serves the page again', async () => {
    const page = () => httpCall(`${gw.url}/dashboard`);
    assert.equal((await page()).status, 200);
    const text = (dashboard: boolean) =>
      configText(upstreams, models(500_000, [{ id: 'added', upstream: 'a' }]), {
        limits,
        metrics: { enabled: false },
        dashboard: { enabled: dashboard },
      });
    replaceFile(file, text(false));
    assert.deepEqual((await nthReload(gw, ++reloads)).sections_changed, ['dashboard']);
    const off = await page();
    assert.equal(off.status, 404, off.text);
    assert.equal(jsonOf(off).code, (jsonOf(await httpCall(`${gw.url}/no-such-path`)) as { code: unknown }).code);
    replaceFile(file, text(true));
    await nthReload(gw, ++reloads);
    assert.equal((await page()).status, 200);
    assert.ok(
      logLines(gw.stdout()).every((l) => !/already sent/i.test(String(l.msg))),
      'one answer per request',
    );
  });
});

describe('config reload, WORKERS=2', () => {
  test('a model added to the file answers on both workers; health says which version each runs', async () => {
    const mock = await startOpenAiUpstream();
    const file = join(makeTempDir('gw-reload-'), 'gateway.json');
    const upstreams = [{ name: 'a', base_url: mock.baseUrl }];
    writeFileSync(file, configText(upstreams, [{ id: 'm1', upstream: 'a' }]));
    let spawned: GatewayProcess | undefined;
    try {
      const gw = await startGatewayProcess(
        { env: { GATEWAY_ENV: 'prod', ADMIN_TOKEN: TOKEN, GATEWAY_CONFIG: file, LOG_LEVEL: 'info', WORKERS: '2' } },
        60_000,
      );
      spawned = gw;
      await waitFor(
        'both workers',
        () => logLines(gw.stdout()).filter((l) => l.msg === 'gateway started').length === 2,
      );
      assert.equal((await chat(gw, 'm2')).status, 404);
      const started = Date.now();
      replaceFile(
        file,
        configText(upstreams, [
          { id: 'm1', upstream: 'a' },
          { id: 'm2', upstream: 'a' },
        ]),
      );
      await waitFor('both workers reloaded', () => reloaded(gw).length === 2, 10_000);
      const seconds = (Date.now() - started) / 1000;
      assert.ok(seconds < 5, `took ${seconds} s`);
      // Each call is a new connection: round-robin hands them to both workers.
      const versions = new Map<unknown, string>();
      // (health and chat calls are not interleaved: two workers would then give each kind to one worker only)
      for (let i = 0; i < 4; i++) {
        const report = await health(gw);
        versions.set((report.instance as { worker: number }).worker, configOf(report).version);
      }
      for (let i = 0; i < 4; i++) assert.equal((await chat(gw, 'm2')).status, 200);
      assert.equal(versions.size, 2, 'both workers answered health');
      assert.equal(new Set(versions.values()).size, 1, 'both run the same version');
      const m2Workers = () =>
        new Set(
          logLines(gw.stdout())
            .filter((l) => l.route === 'chat' && l.model === 'm2' && l.status === 200)
            .map((l) => l.worker),
        ).size;
      await waitFor('m2 answered on both workers (their access lines)', () => m2Workers() === 2);
      // The primary's one scrape: a version series per worker, both the new one; both reloads counted.
      const scrape = (await httpCall(`${gw.url}/metrics`, { headers: bearer(TOKEN) })).text;
      const infos = [...scrape.matchAll(/^llmgw_config_info\{version="([0-9a-f]+)",pid="(\d+)"\} 1$/gm)];
      assert.equal(
        infos.length,
        2,
        scrape
          .split('\n')
          .filter((l) => l.includes('config'))
          .join('\n'),
      );
      assert.deepEqual(new Set(infos.map((m) => m[1])), new Set(versions.values()));
      assert.match(scrape, /^llmgw_config_reloads_total 2$/m);
    } finally {
      await spawned?.kill();
      await mock.close();
    }
  });
});

describe('config reload: the config.reloaded event', () => {
  test('goes to canary receivers only (canary stage), saying what changed; a subscription added live receives events', async () => {
    const mock = await startOpenAiUpstream();
    const [canary, regular, added] = await Promise.all([
      startWebhookReceiver(),
      startWebhookReceiver(),
      startWebhookReceiver(),
    ]);
    const file = join(makeTempDir('gw-reload-'), 'gateway.json');
    const upstreams = [{ name: 'a', base_url: mock.baseUrl }];
    const subscription = (id: string, url: string, canaryToo: boolean) => ({
      id,
      url,
      secrets: [{ env: 'WH_SECRET' }],
      events: ['*'],
      canary: canaryToo,
    });
    const webhooks = (extra: object[] = []) => ({
      webhooks: {
        allow_private_addresses: true,
        poll_interval_ms: 50,
        subscriptions: [
          subscription('canary-rx', canary.url, true),
          subscription('regular-rx', regular.url, false),
          ...extra,
        ],
      },
    });
    writeFileSync(file, configText(upstreams, [{ id: 'm1', upstream: 'a' }], webhooks()));
    let spawned: GatewayProcess | undefined;
    try {
      const gw = await startGatewayProcess({
        env: {
          GATEWAY_ENV: 'prod',
          ADMIN_TOKEN: TOKEN,
          GATEWAY_CONFIG: file,
          LOG_LEVEL: 'info',
          WH_SECRET: 'whsec-config-reload-0123456789abcdef',
        },
      });
      spawned = gw;
      replaceFile(
        file,
        configText(
          upstreams,
          [
            { id: 'm1', upstream: 'a' },
            { id: 'm2', upstream: 'a' },
          ],
          webhooks([subscription('added-rx', added.url, false)]),
        ),
      );
      const [delivery] = await canary.waitFor(1);
      const event = JSON.parse(delivery?.body ?? '{}') as { event: string; data: Record<string, unknown> };
      assert.equal(event.event, 'config.reloaded');
      assert.deepEqual(event.data.models_added, ['m2']);
      assert.deepEqual(event.data.sections_changed, ['webhooks']);
      assert.equal(event.data.trigger, 'file change');
      // The new subscription is live: the next call's chat.completed reaches it (and the regular receiver).
      assert.equal((await chat(gw, 'm2')).status, 200);
      const [completed] = await added.waitFor(1);
      assert.equal((JSON.parse(completed?.body ?? '{}') as { event: string }).event, 'chat.completed');
      await regular.waitFor(1);
      assert.ok(
        regular.deliveries.every((d) => !d.body.includes('config.reloaded')),
        'config.reloaded is in the canary stage',
      );
    } finally {
      await spawned?.kill();
      await Promise.all([mock.close(), canary.close(), regular.close(), added.close()]);
    }
  });
});
