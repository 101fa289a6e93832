/**
 * The dashboard's vector stores section in headless Chromium: stores, files and bytes per caller as the real
 * gateway stored them (the caller with the most bytes first), everyone's on the last row.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { ADMIN_TOKEN } from '../helpers/gateway.js';
import { chromiumSkipReason, launchChromium } from '../helpers/services.js';
import { startVectorStoreUsageFixture, type VectorStoreUsageFixture } from '../helpers/vector-store-usage-fixture.js';

const skip = await chromiumSkipReason();

/** How the page writes bytes (dashboard.js `fmtBytes`). */
const shown = (n: number) =>
  n >= 1048576 ? `${(n / 1048576).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;

describe('dashboard vector stores in headless Chromium', { skip }, () => {
  let f: VectorStoreUsageFixture;
  let browser: Browser;
  before(async () => {
    f = await startVectorStoreUsageFixture();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await f?.close();
  });

  test('stores, files, failed files and bytes per caller, the most bytes first, and all callers', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1100 } });
    const page = await context.newPage();
    await page.goto(`${f.gw.url}/dashboard`);
    await page.locator('#login').waitFor({ state: 'visible' });
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('body[data-loaded="true"]');
    await page.locator('[data-testid=vector-stores-card]').waitFor({ state: 'visible' });
    const rows = await page.$$eval('[data-testid=vector-stores] tbody tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
    );
    const row = (u: typeof f.admin) => [
      u.caller,
      String(u.stores),
      String(u.files),
      '0',
      String(u.failed),
      shown(u.bytes),
    ];
    const callers = [f.admin, f.key].sort((a, b) => b.bytes - a.bytes);
    assert.deepEqual(rows, [
      ...callers.map(row),
      ['all callers', '3', '3', '0', '1', shown(f.admin.bytes + f.key.bytes)],
    ]);
    await context.close();
  });
});
