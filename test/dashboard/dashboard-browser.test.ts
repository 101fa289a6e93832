/**
 * The dashboard in a real browser: Debian's headless Chromium driven by playwright-core. Logs in with the admin
 * token, reads the numbers and charts the page drew from requests made during the test, checks the session is an
 * HttpOnly cookie the page's script cannot read, keeps a screenshot (test-artifacts/dashboard.png), logs out.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { ADMIN_TOKEN } from '../helpers/gateway.js';
import { startDashboardFixture, type DashboardFixture } from '../helpers/dashboard-fixture.js';
import { chromiumSkipReason, launchChromium } from '../helpers/services.js';
import { TEST_ARTIFACTS } from '../helpers/paths.js';

const ARTIFACTS = TEST_ARTIFACTS;
const skip = await chromiumSkipReason();

describe('dashboard in headless Chromium', { skip }, () => {
  let f: DashboardFixture;
  let browser: Browser;
  before(async () => {
    f = await startDashboardFixture();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await f?.close();
  });

  test("log in, see the real numbers and charts, the session out of the script's reach, a screenshot kept, log out", async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1100 } });
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().includes('401')) consoleErrors.push(message.text());
    });
    const requestedUrls: string[] = [];
    page.on('request', (request) => requestedUrls.push(request.url()));

    await page.goto(`${f.gw.url}/dashboard`);
    await page.locator('#login').waitFor({ state: 'visible' });
    await page.fill('#token', 'wrong-token-0123456789');
    await page.click('#login-form button[type=submit]');
    await page.locator('#login-error').filter({ hasText: 'not valid' }).waitFor();

    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('body[data-loaded="true"]');
    assert.equal(await page.inputValue('#token'), '', 'the token is not kept in the form');

    assert.equal(await page.textContent('[data-testid=total-requests]'), String(f.sent.requests));
    assert.match(
      (await page.textContent('[data-testid=total-errors]')) ?? '',
      new RegExp(`^${f.sent.serverErrors} \\(`),
    );
    assert.equal(await page.textContent('[data-testid=total-refused]'), String(f.sent.clientErrors));
    assert.equal(
      await page.textContent('[data-testid=total-tokens]'),
      new Intl.NumberFormat('en-US').format(f.sent.tokens),
    );
    assert.match(
      (await page.textContent('[data-testid=total-latency]')) ?? '',
      /^\d+\.\d ms \/ \d+\.\d ms \/ \d+\.\d ms$/,
    );
    assert.match((await page.textContent('[data-testid=total-cost]')) ?? '', /^\$0\.0000\d\d$/);

    // Charts drawn from the data: bars whose values add up to the requests made, latency lines, per-model bars.
    const barValues = await page.$$eval('[data-testid=chart-requests] rect', (rects) =>
      rects.map((r) => Number(r.getAttribute('data-value'))),
    );
    assert.equal(
      barValues.reduce((a, b) => a + b, 0),
      f.sent.requests,
    );
    assert.equal(await page.locator('[data-testid=chart-requests] rect[data-kind=failed]').count(), 1);
    assert.equal(await page.locator('[data-testid=chart-latency] polyline').count(), 3);
    assert.deepEqual(
      await page.$$eval('[data-testid=chart-models] .bar-row', (rows) => rows.map((r) => r.getAttribute('data-name'))),
      ['priced', f.sent.unpricedModel, '(none)'],
    );
    // A model with no price (config or catalog) reads as unpriced, not as a cost of $0.
    const unpriced = page.locator(`[data-testid=chart-models] .bar-row[data-name="${f.sent.unpricedModel}"] .num`);
    assert.match((await unpriced.textContent()) ?? '', /^[\d,]+ tok · unpriced$/);
    assert.match(
      (await page.locator('[data-testid=chart-models] .bar-row[data-name=priced] .num').textContent()) ?? '',
      /tok · \$0\.0000\d\d$/,
    );

    // At 1400 px the upstream-health table fits its card: no column runs past the card's edge, nothing scrolls.
    // Run in the page (a string: this project compiles without the DOM's types).
    const fit = (await page.evaluate(`(() => {
      const table = document.querySelector('[data-testid=upstreams]');
      const card = table.closest('.card');
      const contentRight = card.getBoundingClientRect().right - parseFloat(getComputedStyle(card).paddingRight);
      const lastRight = Math.max(...[...table.querySelectorAll('th, td')].map((c) => c.getBoundingClientRect().right));
      const overflowing = [card, ...card.querySelectorAll('*')]
        .filter((n) => n.scrollWidth > n.clientWidth)
        .map((n) => n.tagName + '.' + n.className + ': ' + n.scrollWidth + ' > ' + n.clientWidth);
      return { lastRight, contentRight, overflowing };
    })()`)) as { lastRight: number; contentRight: number; overflowing: string[] };
    assert.ok(
      fit.lastRight <= fit.contentRight + 0.5,
      `the last column ends at ${fit.lastRight} px, the card at ${fit.contentRight}`,
    );
    assert.deepEqual(fit.overflowing, [], 'nothing in the card is wider than its box');
    assert.deepEqual(
      await page.$$eval('[data-testid=chart-callers] .bar-row', (rows) => rows.map((r) => r.getAttribute('data-name'))),
      ['admin'],
    );

    assert.match((await page.textContent('[data-testid=failures]')) ?? '', new RegExp(f.sent.failedRequestId));
    assert.match((await page.textContent('[data-testid=failures]')) ?? '', /upstream_error/);
    assert.match((await page.textContent('[data-testid=upstreams]')) ?? '', /default\s*ok\s*closed/);
    assert.match((await page.textContent('[data-testid=dead-letters]')) ?? '', /chat\.failed\s*billing\s*1/);

    // The session is an HttpOnly, SameSite=Strict cookie: the browser holds it, the page's script cannot read it.
    const cookies = await context.cookies();
    assert.deepEqual(
      cookies.map((c) => [c.name, c.httpOnly, c.sameSite, c.path]),
      [['llmgw_dashboard', true, 'Strict', '/dashboard']],
    );
    assert.equal(await page.evaluate('document.cookie'), '');
    assert.ok(
      requestedUrls.every((u) => u.startsWith(f.gw.url)),
      `only the gateway was contacted: ${requestedUrls.filter((u) => !u.startsWith(f.gw.url)).join(', ')}`,
    );
    assert.ok(
      requestedUrls.every((u) => !u.includes(ADMIN_TOKEN)),
      'the token never appears in a URL',
    );

    mkdirSync(ARTIFACTS, { recursive: true });
    const screenshot = await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true });
    assert.ok(screenshot.length > 10_000, 'a real picture was taken');
    console.log(`# dashboard screenshot kept at ${join(ARTIFACTS, 'dashboard.png')}`);

    await page.click('#logout');
    await page.locator('#login').waitFor({ state: 'visible' });
    assert.deepEqual(await context.cookies(), []);
    await page.reload();
    await page.locator('#login').waitFor({ state: 'visible' });
    assert.deepEqual(consoleErrors, []);
    await context.close();
  });
});
