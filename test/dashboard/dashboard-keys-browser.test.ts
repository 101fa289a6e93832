/**
 * The dashboard's Keys page in a real browser (Debian's headless Chromium driven by playwright-core) against a real
 * gateway on a real socket with its SQLite key store: log in, open Keys, create a key (its secret shown once,
 * copied), call the gateway with it, see its request counted on the page, rotate it (a new secret shown once, the
 * old key listed with its grace expiry), revoke the new one (then refused with key_revoked). The CSRF defences of
 * the keys API (Origin, JSON only), its session check, a gateway without usage records and one without a key
 * store are exercised with plain HTTP (those run without Chromium too). Screenshots are kept in
 * test-artifacts/dashboard-keys.png (the list) and test-artifacts/dashboard-keys-secret.png (the secret panel).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { ADMIN_TOKEN, CHAT_PATH, authHeaders, chatBody, startGateway, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { chromiumSkipReason, launchChromium } from '../helpers/services.js';
import { waitForValue } from '../helpers/wait.js';
import { AdminAuthenticator } from '../../src/auth/admin-auth.js';
import type { HealthReport } from '../../src/core/health/health-service.js';
import { mountDashboard } from '../../src/dashboard/routes.js';
import { createHttpServer } from '../../src/http/server.js';
import { createLogger } from '../../src/observability/logger.js';
import { TEST_ARTIFACTS } from '../helpers/paths.js';

const ARTIFACTS = TEST_ARTIFACTS;
const KEY_PATTERN = /^gwk_dev_([a-z0-9]{10})_[A-Za-z0-9_-]{43}$/;
const fmtInt = (n: number) => new Intl.NumberFormat('en-US').format(n);
const skip = await chromiumSkipReason();

interface ListedKey {
  id: string;
  name: string;
  state: string;
  models: string[];
  routes: string[];
  mcp_tools: string[];
  budget: { tokens?: number; period_seconds: number } | null;
  expires_at: string | null;
  revoked_at: string | null;
  rotated_from: string | null;
  usage: { requests: number; total_tokens: number; cost_usd: number } | null;
  budget_left: { tokens_left: number | null; tokens_used: number; period_seconds: number } | null;
}

const fixture = useGateway({
  configFile: {
    name: 'dashboard-keys.json',
    text: JSON.stringify({
      models: [
        {
          id: 'priced',
          upstream: 'default',
          upstream_model: 'gpt-4o-mini',
          pricing: { input_per_million: 1, output_per_million: 2 },
        },
      ],
    }),
  },
});

const adminKeys = async (query = '') => {
  const answer = await call(`${fixture.gw.url}/v1/?route=keys${query}`, { headers: authHeaders() });
  assert.equal(answer.status, 200, answer.text);
  return answer.json as unknown as { data: ListedKey[] } & ListedKey;
};
const dashboardKeys = async (url = fixture.gw.url) => {
  const answer = await call(`${url}/dashboard/api/keys`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.headers['cache-control'], 'no-store');
  return answer.json as unknown as { usage_records: boolean; grantable_routes: string[]; data: ListedKey[] };
};
const sessionCookie = async () => {
  const login = await call(`${fixture.gw.url}/dashboard/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: ADMIN_TOKEN }),
  });
  assert.equal(login.status, 204);
  return String(login.headers['set-cookie']).split(';')[0] as string;
};

describe('dashboard keys API (HTTP)', () => {
  test('the keys API: a session or the admin token to read; mutations only same-origin and JSON', async () => {
    const none = await call(`${fixture.gw.url}/dashboard/api/keys`);
    assert.equal(none.status, 401);
    assert.equal(none.json.code, 'authentication_required');
    const wrong = await call(`${fixture.gw.url}/dashboard/api/keys`, {
      headers: { authorization: 'Bearer not-the-admin-token-0123' },
    });
    assert.equal(wrong.status, 401);
    const unauthenticatedCreate = await call(`${fixture.gw.url}/dashboard/api/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x', models: ['*'] }),
    });
    assert.equal(unauthenticatedCreate.status, 401);

    const cookie = await sessionCookie();
    const listed = await call(`${fixture.gw.url}/dashboard/api/keys?state=active`, { headers: { cookie } });
    assert.equal(listed.status, 200);
    assert.equal(listed.headers['cache-control'], 'no-store');
    assert.deepEqual(listed.json.data, []);
    assert.equal(
      (await call(`${fixture.gw.url}/dashboard/api/keys?state=lost`, { headers: { cookie } })).json.code,
      'invalid_query_parameter',
    );

    // A cross-site page POSTing with the operator's session: refused on its Origin, whatever the body.
    const evil = await call(`${fixture.gw.url}/dashboard/api/keys`, {
      method: 'POST',
      headers: { cookie, origin: 'http://evil.example', 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'evil', models: ['*'] }),
    });
    assert.equal(evil.status, 400);
    assert.equal(evil.json.code, 'bad_request');
    assert.match(String(evil.json.details?.reason), /cross-origin/);
    // What an HTML form can send (urlencoded, text/plain, multipart) is refused before the body is read.
    for (const type of ['application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x']) {
      const form = await call(`${fixture.gw.url}/dashboard/api/keys`, {
        method: 'POST',
        headers: { cookie, origin: fixture.gw.url, 'content-type': type },
        body: 'name=evil&models=*',
      });
      assert.equal(form.status, 415, `${type}: ${form.text}`);
      assert.equal(form.json.code, 'unsupported_media_type');
    }
    const bodiless = await call(`${fixture.gw.url}/dashboard/api/keys/abc0123456/revoke`, {
      method: 'POST',
      headers: { cookie },
    });
    assert.equal(bodiless.status, 415);
    const evilRevoke = await call(`${fixture.gw.url}/dashboard/api/keys/abc0123456/revoke`, {
      method: 'POST',
      headers: { cookie, origin: 'https://evil.example', 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(evilRevoke.status, 400);
    assert.equal((await adminKeys()).data.length, 0, 'no key was made by any refused request');

    // Same origin and JSON, but wrong: the admin API's validation and codes.
    const invalid = await call(`${fixture.gw.url}/dashboard/api/keys`, {
      method: 'POST',
      headers: { cookie, origin: fixture.gw.url, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x', models: [], routes: ['chat'] }),
    });
    assert.equal(invalid.status, 400);
    assert.equal(invalid.json.code, 'validation_failed');
    const unknownRoute = await call(`${fixture.gw.url}/dashboard/api/keys`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x', models: ['*'], routes: ['keys'] }),
    });
    assert.equal(unknownRoute.json.code, 'validation_failed');
    const missing = await call(`${fixture.gw.url}/dashboard/api/keys/zzzzzzzzzz/rotate`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(missing.status, 404);
    assert.equal(missing.json.code, 'key_not_found');
    assert.equal((await adminKeys()).data.length, 0);
  });
});

describe('dashboard Keys page in headless Chromium', { skip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  test('create a key on the page, use it, see it counted, rotate it, revoke the new one', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: fixture.gw.url });
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().includes('401')) consoleErrors.push(message.text());
    });
    page.on('dialog', (dialog) => {
      consoleErrors.push(`unexpected dialog: ${dialog.message()}`);
      void dialog.dismiss();
    });

    await page.goto(`${fixture.gw.url}/dashboard`);
    await page.locator('#login').waitFor({ state: 'visible' });
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('body[data-loaded="true"]');
    assert.ok(await page.locator('#overview').isVisible(), 'the overview is the first tab');

    await page.click('[data-testid=tab-keys]');
    await page.waitForSelector('body[data-keys-loaded]');
    assert.ok(await page.locator('#keys').isVisible());
    assert.ok(await page.locator('#overview').isHidden());
    assert.equal(await page.getAttribute('#tab-keys', 'aria-selected'), 'true');
    assert.match((await page.textContent('[data-testid=keys-table] tbody')) ?? '', /No key\./);
    // The route choices come from the gateway (the routes a key can be given); chat is checked.
    assert.deepEqual(
      await page.evaluate("[...document.querySelectorAll('#key-routes input')].map((b) => [b.value, b.checked])"),
      [
        ['chat', true],
        ['models', false],
        ['responses', false],
        ['embeddings', false],
        ['messages', false],
        ['gemini', false],
        ['files', false],
        ['vector_stores', false],
        ['batches', false],
        ['mcp', false],
      ],
    );

    // Create: name, models, routes, a token budget per day, an expiry.
    await page.fill('#key-name', 'ci-bot');
    await page.fill('#key-models', 'priced, gpt-4o-mini');
    await page.check('#key-routes input[value=models]');
    await page.check('#key-routes input[value=mcp]');
    await page.fill('#key-mcp-tools', 'fs/read_*, everything/echo');
    await page.fill('#key-budget-tokens', '100000');
    await page.selectOption('#key-budget-period', '86400');
    await page.fill('#key-expires', '2099-01-01T00:00');
    await page.click('[data-testid=key-create]');
    await page.locator('[data-testid=key-secret]').waitFor({ state: 'visible' });
    const secret = ((await page.textContent('[data-testid=key-secret-value]')) ?? '').trim();
    const match = KEY_PATTERN.exec(secret);
    assert.ok(match, `a gwk_dev_ key is shown: ${secret.slice(0, 9)}…`);
    const keyId = match[1] as string;
    assert.match((await page.textContent('[data-testid=key-secret]')) ?? '', /will not be shown again/);
    assert.match((await page.textContent('#key-secret-title')) ?? '', new RegExp(`ci-bot.*${keyId}`));
    assert.equal(await page.inputValue('#key-name'), '', 'the form is emptied after the key was made');
    assert.equal(await page.isChecked('#key-routes input[value=chat]'), true, 'a reset form has chat checked again');

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.locator('[data-testid=key-secret]').scrollIntoViewIfNeeded();
    const secretShot = await page.screenshot({ path: join(ARTIFACTS, 'dashboard-keys-secret.png') });
    assert.ok(secretShot.length > 10_000, 'a real picture of the secret panel was taken');

    // Copy: to the clipboard (permission granted to this origin), or else the text is selected for Ctrl+C.
    await page.click('[data-testid=key-secret-copy]');
    const copied = await waitForValue(
      'the copy to be reported',
      () => page.textContent('[data-testid=key-secret-copied]'),
      (text) => Boolean(text),
    );
    console.log(`# Copy: ${copied}`);
    if (copied?.startsWith('Copied')) assert.equal(await page.evaluate('navigator.clipboard.readText()'), secret);
    else assert.equal(await page.evaluate('String(window.getSelection())'), secret);

    // The store has it, with the page's rights and no secret (only the key as listed).
    const stored = await adminKeys(`&id=${keyId}`);
    assert.equal(stored.name, 'ci-bot');
    assert.deepEqual(stored.models, ['priced', 'gpt-4o-mini']);
    assert.deepEqual(stored.routes, ['chat', 'models', 'mcp']);
    assert.deepEqual(stored.mcp_tools, ['fs/read_*', 'everything/echo']);
    assert.deepEqual(stored.budget, { tokens: 100_000, period_seconds: 86_400 });
    assert.equal(
      new Date(stored.expires_at as string).getTime(),
      new Date(2099, 0, 1).getTime(),
      "the expiry is the browser's local time",
    );
    assert.ok(!JSON.stringify(stored).includes(secret));

    const row = (id: string) => page.locator(`[data-testid=keys-table] tr[data-key-id="${id}"]`);
    const cell = (id: string, column: string) => row(id).locator(`td[data-col="${column}"]`);
    assert.equal(await cell(keyId, 'state').textContent(), 'active');
    assert.equal(await cell(keyId, 'models').textContent(), 'priced, gpt-4o-mini');
    assert.equal(await cell(keyId, 'routes').textContent(), 'chat, models, mcp');
    assert.equal(await cell(keyId, 'mcp-tools').textContent(), 'fs/read_*, everything/echo');
    assert.equal(await cell(keyId, 'requests').textContent(), '0');
    assert.equal(await cell(keyId, 'budget').textContent(), '100,000 tok left per 1 d');
    assert.equal(await cell(keyId, 'expires').textContent(), fmtTime(new Date(2099, 0, 1).toISOString()));

    // Hidden: the secret leaves the page, and nothing the page can fetch holds it again.
    await page.click('#key-secret-done');
    assert.ok(await page.locator('[data-testid=key-secret]').isHidden());
    assert.equal(await page.textContent('[data-testid=key-secret-value]'), '');
    assert.ok(!(await page.content()).includes(secret));
    assert.ok(!JSON.stringify(await dashboardKeys()).includes(secret));

    // The secret works: a real chat call through the gateway to the mock upstream.
    const chat = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: chatBody({ model: 'priced' }),
    });
    assert.equal(chat.status, 200, chat.text);
    const tokens = (chat.json.usage as { total_tokens: number }).total_tokens;
    assert.ok(tokens > 0);

    // Once its usage record is written, the page (reloaded with Refresh) counts it.
    const requests = await waitForValue(
      'the page to count the request',
      async () => reloadKeys(page).then(() => cell(keyId, 'requests').textContent()),
      (text) => text === '1',
    );
    assert.equal(requests, '1');
    assert.equal(await cell(keyId, 'tokens').textContent(), fmtInt(tokens));
    assert.match((await cell(keyId, 'cost').textContent()) ?? '', /^\$0\.0000\d\d$/);
    assert.equal(await cell(keyId, 'budget').textContent(), `${fmtInt(100_000 - tokens)} tok left per 1 d`);
    const listed = (await dashboardKeys()).data.find((k) => k.id === keyId);
    assert.equal(listed?.usage?.requests, 1);
    assert.equal(listed?.usage?.total_tokens, tokens);
    assert.equal(listed?.budget_left?.tokens_left, 100_000 - tokens);
    const report = await adminKeys(`&id=${keyId}&action=usage`);
    assert.equal((report as unknown as { requests: number }).requests, 1, 'the admin API says the same');

    const listShot = await page.screenshot({ path: join(ARTIFACTS, 'dashboard-keys.png'), fullPage: true });
    assert.ok(listShot.length > 10_000, 'a real picture of the list was taken');
    console.log(
      `# Keys page screenshots kept at ${join(ARTIFACTS, 'dashboard-keys.png')} and dashboard-keys-secret.png`,
    );

    // Rotate (a confirmation on the page, grace 1 day): a new secret shown once; the old key listed with its end.
    await row(keyId).locator('button[data-action=rotate]').click();
    await page.locator('[data-testid=key-confirm]').waitFor({ state: 'visible' });
    assert.match((await page.textContent('#key-confirm-text')) ?? '', new RegExp(`Rotate key “ci-bot” \\(${keyId}\\)`));
    const rotatedAt = Date.now();
    await page.click('[data-testid=key-confirm-yes]');
    await page.locator('[data-testid=key-confirm]').waitFor({ state: 'hidden' });
    await page.locator('[data-testid=key-secret]').waitFor({ state: 'visible' });
    const secret2 = ((await page.textContent('[data-testid=key-secret-value]')) ?? '').trim();
    const match2 = KEY_PATTERN.exec(secret2);
    assert.ok(match2, 'the new key is shown');
    assert.notEqual(secret2, secret);
    const newId = match2[1] as string;
    assert.notEqual(newId, keyId);
    assert.match((await page.textContent('[data-testid=key-secret]')) ?? '', /will not be shown again/);
    assert.match(
      (await page.textContent('[data-testid=key-secret-previous]')) ?? '',
      new RegExp(`old key ${keyId} works until`),
    );
    await row(newId).waitFor();
    assert.match(
      (await row(newId).locator('td[data-col=name]').textContent()) ?? '',
      new RegExp(`ci-bot\\s*rotated from ${keyId}`),
    );
    const oldEnds = Date.parse(`${(await cell(keyId, 'expires').textContent()) ?? ''}Z`.replace(' ', 'T'));
    assert.ok(
      Math.abs(oldEnds - (rotatedAt + 86_400_000)) < 120_000,
      `the old key ends a day after the rotation (${new Date(oldEnds).toISOString()})`,
    );
    assert.equal(await cell(keyId, 'state').textContent(), 'active', 'the old key works during its grace period');
    await page.click('#key-secret-done');
    const old = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: chatBody({ model: 'priced' }),
    });
    assert.equal(old.status, 200, 'the old key still answers during the grace period');

    // Revoke the new key (confirmed on the page); it is then refused.
    await row(newId).locator('button[data-action=revoke]').click();
    await page.locator('[data-testid=key-confirm]').waitFor({ state: 'visible' });
    assert.match((await page.textContent('#key-confirm-text')) ?? '', new RegExp(`Revoke key “ci-bot” \\(${newId}\\)`));
    assert.ok(await page.locator('#key-confirm-grace-label').isHidden(), 'no grace to choose for a revocation');
    await page.click('[data-testid=key-confirm-yes]');
    await page.locator(`[data-testid=keys-table] tr[data-key-id="${newId}"][data-state=revoked]`).waitFor();
    assert.equal(await cell(newId, 'state').textContent(), 'revoked');
    assert.match((await cell(newId, 'expires').textContent()) ?? '', /^revoked \d{4}-/);
    assert.equal(await row(newId).locator('button').count(), 0, 'a revoked key has no action');
    const refused = await waitForValue(
      'the revoked key to be refused',
      () =>
        call(`${fixture.gw.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${secret2}`, 'content-type': 'application/json' },
          body: chatBody({ model: 'priced' }),
        }),
      (answer) => answer.status === 401,
    );
    assert.equal(refused.json.code, 'key_revoked');

    // The filter shows only the revoked key.
    await page.selectOption('#keys-state', 'revoked');
    await waitForValue(
      'only the revoked key to be listed',
      () => page.locator('[data-testid=keys-table] tbody tr[data-key-id]').count(),
      (n) => n === 1,
    );
    assert.equal(await page.getAttribute('[data-testid=keys-table] tbody tr[data-key-id]', 'data-key-id'), newId);

    // The store says the same; every change is one audit line "by dashboard", and no secret reached the log.
    const all = (await adminKeys()).data;
    assert.deepEqual(
      all.map((k) => [k.id, k.state, k.rotated_from]),
      [
        [keyId, 'active', null],
        [newId, 'revoked', keyId],
      ],
    );
    assert.ok(Math.abs(Date.parse(all[0]?.expires_at as string) - oldEnds) < 1000);
    const audits = fixture.gw.logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((l) => l.audit !== undefined);
    assert.deepEqual(
      audits.map((a) => [a.audit, a.key_id, a.by]),
      [
        ['key.created', keyId, 'dashboard'],
        ['key.rotated', newId, 'dashboard'],
        ['key.revoked', newId, 'dashboard'],
      ],
    );
    const logs = fixture.gw.logLines.join('\n');
    assert.ok(!logs.includes(secret) && !logs.includes(secret2), 'no secret in the log');
    assert.deepEqual(consoleErrors, []);
    await context.close();
  });
});

describe('dashboard keys API without usage records or without a key store', () => {
  test('usage records off: keys are listed and made, with usage and budget left null', async () => {
    const off = await startGateway({
      configFile: { name: 'off.json', text: JSON.stringify({ usage: { enabled: false } }) },
    });
    try {
      const made = await call(`${off.url}/dashboard/api/keys`, {
        method: 'POST',
        headers: authHeaders(),
        body: JSON.stringify({ name: 'no-usage', models: ['*'], budget: { tokens: 1000, period_seconds: 3600 } }),
        disclosesKey: true,
      });
      assert.equal(made.status, 201, made.text);
      assert.match(String(made.json.key), KEY_PATTERN);
      assert.equal(made.headers['cache-control'], 'no-store');
      const list = await dashboardKeys(off.url);
      assert.equal(list.usage_records, false);
      assert.deepEqual(
        list.data.map((k) => [k.name, k.usage, k.budget_left, k.budget]),
        [['no-usage', null, null, { tokens: 1000, period_seconds: 3600 }]],
      );
    } finally {
      await off.close();
    }
  });

  test('no key store: every keys call is capability_not_supported', async () => {
    const logger = createLogger({ level: 'silent', secrets: [ADMIN_TOKEN], destination: { write: () => undefined } });
    const app = createHttpServer({
      logger,
      bodyLimitBytes: 1 << 20,
      requestTimeoutMs: 10_000,
      isShuttingDown: () => false,
    });
    mountDashboard(app, {
      admin: new AdminAuthenticator([ADMIN_TOKEN]),
      adminTokens: [ADMIN_TOKEN],
      sessionTtlMs: 3_600_000,
      sources: {
        usage: undefined,
        flushUsage: async () => undefined,
        health: async () => ({ checks: { upstreams: {} } }) as unknown as HealthReport,
        outbox: undefined,
        subscriptions: [],
      },
    });
    try {
      const list = await app.inject({
        method: 'GET',
        url: '/dashboard/api/keys',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      assert.equal(list.statusCode, 400);
      assert.equal(list.json().code, 'capability_not_supported');
      const create = await app.inject({
        method: 'POST',
        url: '/dashboard/api/keys',
        headers: authHeaders(),
        payload: JSON.stringify({ name: 'x', models: ['*'] }),
      });
      assert.equal(create.json().code, 'capability_not_supported');
      const revoke = await app.inject({
        method: 'POST',
        url: '/dashboard/api/keys/abc/revoke',
        headers: authHeaders(),
        payload: '{}',
      });
      assert.equal(revoke.json().code, 'capability_not_supported');
    } finally {
      await app.close();
    }
  });
});

/** Clicks Refresh and waits for the list the click asked for. */
async function reloadKeys(page: Page): Promise<void> {
  const before = String(await page.evaluate('document.body.dataset.keysLoaded'));
  await page.click('[data-testid=keys-refresh]');
  // A selector, not waitForFunction: the page's CSP (no 'unsafe-eval') refuses a polled function.
  await page.locator(`body:not([data-keys-loaded="${before}"])`).waitFor({ state: 'attached' });
}

function fmtTime(iso: string): string {
  return iso.replace('T', ' ').slice(0, 19);
}
