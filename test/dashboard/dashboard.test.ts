/**
 * The dashboard over HTTP: login with the admin token answered by an HttpOnly session cookie, the overview
 * document's numbers against the traffic the test made, and the refusals (no session, bad token, bad window,
 * cross-origin posts, a token in the URL). The same page in a real browser: test/dashboard/dashboard-browser.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, authHeaders, startGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { startDashboardFixture, type DashboardFixture } from '../helpers/dashboard-fixture.js';
import { DashboardSessions } from '../../src/dashboard/session.js';
import { percentiles } from '../../src/dashboard/overview.js';
import { LATENCY_BIN_EDGES_MS } from '../../src/store/usage-sql.js';

interface Overview {
  window: string;
  bucketSeconds: number;
  totals: {
    requests: number;
    serverErrors: number;
    clientErrors: number;
    promptTokens: number;
    completionTokens: number;
    costUsd: number;
    p50: number | null;
    p95: number | null;
    p99: number | null;
  };
  series: Array<{ time: string; requests: number; serverErrors: number; clientErrors: number }>;
  byModel: Array<{ group: string; requests: number; costUsd: number }>;
  byCaller: Array<{ group: string; requests: number }>;
  byRoute: Array<{ group: string; requests: number }>;
  recentFailures: Array<{ requestId: string; status: number; code: string }>;
  upstreams: Array<{ name: string; status: string; circuit: string }>;
  webhooks: {
    subscriptions: Array<{ id: string; backlog: number }>;
    deadLetters: Array<{ event: string; subscription: string; attempts: number; lastError: string }>;
  };
}

async function login(url: string, token = ADMIN_TOKEN, headers: Record<string, string> = {}) {
  return call(`${url}/dashboard/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ token }),
  });
}

describe('dashboard (HTTP)', () => {
  let f: DashboardFixture;
  before(async () => {
    f = await startDashboardFixture();
  });
  after(async () => {
    await f.close();
  });

  test('the page, its script and style come from the gateway itself, under a strict CSP', async () => {
    const page = await call(`${f.gw.url}/dashboard`);
    assert.equal(page.status, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(String(page.headers['content-security-policy']), /default-src 'none'; script-src 'self'/);
    assert.equal(page.headers['x-frame-options'], 'DENY');
    assert.match(page.text, /<script src="\/dashboard\/dashboard\.js" defer><\/script>/);
    assert.doesNotMatch(page.text, /https?:\/\//, 'nothing loaded from another origin');
    const script = await call(`${f.gw.url}/dashboard/dashboard.js`);
    assert.equal(script.status, 200);
    assert.match(String(script.headers['content-type']), /^text\/javascript/);
    assert.doesNotMatch(script.text, /innerHTML/, 'values are written as text, never parsed as HTML');
    assert.equal((await call(`${f.gw.url}/dashboard/dashboard.css`)).status, 200);
  });

  test('login: a wrong token is a 401 with its code; the right one sets an HttpOnly, SameSite=Strict cookie, not the token', async () => {
    const wrong = await login(f.gw.url, 'not-the-token');
    assert.equal(wrong.status, 401);
    assert.equal(wrong.json.code, 'invalid_token');
    assert.equal(wrong.headers['set-cookie'], undefined);
    const empty = await call(`${f.gw.url}/dashboard/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(empty.status, 400);
    assert.equal(empty.json.code, 'validation_failed');
    assert.match(JSON.stringify(empty.json.details), /token/);

    const ok = await login(f.gw.url);
    assert.equal(ok.status, 204);
    const cookie = String(ok.headers['set-cookie']);
    assert.match(
      cookie,
      /^llmgw_dashboard=\d+\.[\w-]+\.[\w-]+; Path=\/dashboard; HttpOnly; SameSite=Strict; Max-Age=43200$/,
    );
    assert.ok(!cookie.includes(ADMIN_TOKEN));
    assert.ok(!f.gw.logLines.join('\n').includes(ADMIN_TOKEN), 'the token never reaches the log');
  });

  test('the overview needs a session (or the bearer token) and matches the traffic made', async () => {
    const none = await call(`${f.gw.url}/dashboard/api/overview`);
    assert.equal(none.status, 401);
    assert.equal(none.json.code, 'authentication_required');
    assert.match(String(none.json.details?.login), /POST \/dashboard\/login/);
    const forged = await call(`${f.gw.url}/dashboard/api/overview`, {
      headers: { cookie: `llmgw_dashboard=9999999999.abc.${'A'.repeat(43)}` },
    });
    assert.equal(forged.status, 401);

    const cookie = String((await login(f.gw.url)).headers['set-cookie']).split(';')[0] as string;
    const answer = await call(`${f.gw.url}/dashboard/api/overview?window=1h`, { headers: { cookie } });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['cache-control'], 'no-store');
    const o = answer.json as unknown as Overview & { usageRecords: boolean };
    assert.equal(o.usageRecords, true);
    assert.equal(o.totals.requests, f.sent.requests);
    assert.equal(o.totals.serverErrors, f.sent.serverErrors);
    assert.equal(o.totals.clientErrors, f.sent.clientErrors);
    assert.equal(o.totals.promptTokens + o.totals.completionTokens, f.sent.tokens);
    assert.ok(o.totals.costUsd > 0);
    assert.ok(
      o.totals.p50 !== null &&
        o.totals.p50 > 0 &&
        (o.totals.p95 ?? 0) >= o.totals.p50 &&
        (o.totals.p99 ?? 0) >= (o.totals.p95 ?? 0),
    );
    assert.equal(o.series.length, 60);
    assert.equal(o.bucketSeconds, 60);
    assert.equal(
      o.series.reduce((n, p) => n + p.requests, 0),
      f.sent.requests,
      'every request lies in one bucket',
    );
    assert.deepEqual(
      o.byModel.map((m) => [m.group, m.requests]),
      [
        ['priced', 4],
        [f.sent.unpricedModel, 2],
        ['(none)', 1],
      ],
      'the refused body named no readable model',
    );
    assert.deepEqual(
      o.byCaller.map((c) => [c.group, c.requests]),
      [['admin', f.sent.requests]],
    );
    assert.deepEqual(
      o.byRoute.map((c) => [c.group, c.requests]),
      [['chat', f.sent.requests]],
      'the fixture made chat calls only',
    );
    assert.equal(o.recentFailures[0]?.code, 'validation_failed');
    assert.deepEqual(
      o.recentFailures.find((r) => r.requestId === f.sent.failedRequestId),
      { ...o.recentFailures.find((r) => r.requestId === f.sent.failedRequestId), status: 502, code: 'upstream_error' },
    );
    assert.deepEqual(
      o.upstreams.map((u) => [u.name, u.status, u.circuit]),
      [['default', 'ok', 'closed']],
    );
    assert.deepEqual(o.webhooks.subscriptions, [{ id: 'billing', backlog: 0 }]);
    assert.deepEqual(
      o.webhooks.deadLetters.map((d) => [d.event, d.subscription, d.attempts]),
      [
        ['chat.failed', 'billing', 1],
        ['chat.failed', 'billing', 1],
      ],
    );
    assert.match(o.webhooks.deadLetters[0]?.lastError ?? '', /500/);

    const bearer = await call(`${f.gw.url}/dashboard/api/overview?window=7d`, { headers: authHeaders() });
    assert.equal(bearer.status, 200);
    assert.equal((bearer.json as unknown as Overview).series.length, 84);
    assert.equal((bearer.json as unknown as Overview).totals.requests, f.sent.requests);
  });

  test('bad input: an unknown window, a cross-origin login, a token in the URL', async () => {
    const bad = await call(`${f.gw.url}/dashboard/api/overview?window=2d`, { headers: authHeaders() });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.code, 'invalid_query_parameter');
    assert.deepEqual(bad.json.details, { parameter: 'window', allowed: ['1h', '24h', '7d'], got: '2d' });
    const cross = await login(f.gw.url, ADMIN_TOKEN, { origin: 'https://evil.example' });
    assert.equal(cross.status, 400);
    assert.equal(cross.headers['set-cookie'], undefined);
    const sameSite = await login(f.gw.url, ADMIN_TOKEN, { origin: f.gw.url });
    assert.equal(sameSite.status, 204, 'the page itself posts with its own origin');
    const otherPort = await login(f.gw.url, ADMIN_TOKEN, { origin: 'http://127.0.0.1:1' });
    assert.equal(otherPort.status, 400, 'another port is another origin');
    const inUrl = await call(`${f.gw.url}/dashboard/api/overview?token=${ADMIN_TOKEN}`);
    assert.equal(inUrl.status, 400);
    assert.equal(inUrl.json.code, 'credentials_in_query');
  });

  test('logout clears the cookie', async () => {
    const out = await call(`${f.gw.url}/dashboard/logout`, { method: 'POST' });
    assert.equal(out.status, 204);
    assert.match(
      String(out.headers['set-cookie']),
      /^llmgw_dashboard=; Path=\/dashboard; HttpOnly; SameSite=Strict; Max-Age=0$/,
    );
  });
});

describe('dashboard sessions and percentiles', () => {
  test('a session is valid until it expires, for any current admin token, and not after the token changed', () => {
    let now = 1_000_000;
    const sessions = new DashboardSessions(['token-new-0123456789', 'token-old-0123456789'], 60_000, () => now);
    const value = sessions.issue();
    assert.ok(sessions.valid(value));
    assert.ok(
      new DashboardSessions(['token-other-0123456789', 'token-new-0123456789'], 60_000, () => now).valid(value),
      'rotation keeps sessions of a token still listed',
    );
    assert.ok(
      !new DashboardSessions(['token-other-0123456789'], 60_000, () => now).valid(value),
      'a removed token ends its sessions',
    );
    for (let i = 0; i < 50; i++) {
      const position = value.length - 1 - i;
      const changed = value.slice(0, position) + (value[position] === 'A' ? 'B' : 'A') + value.slice(position + 1);
      assert.ok(!sessions.valid(changed), `a changed character at ${position}`);
    }
    assert.ok(
      !sessions.valid(`${Number(value.split('.')[0]) + 1000}.${value.split('.').slice(1).join('.')}`),
      'a longer expiry is not signed',
    );
    now += 60_001;
    assert.ok(!sessions.valid(value), 'expired');
  });

  test('percentiles from latency bins land inside the bin of the true value', () => {
    const counts = new Array<number>(LATENCY_BIN_EDGES_MS.length + 1).fill(0);
    const latencies = Array.from({ length: 1000 }, (_, i) => 5 + i * 0.5); // 5 .. 504.5 ms
    for (const l of latencies) {
      const bin = LATENCY_BIN_EDGES_MS.findIndex((e) => l < e);
      counts[bin] = (counts[bin] ?? 0) + 1;
    }
    const p = percentiles(counts);
    const truth = (q: number) => latencies[Math.ceil(q * latencies.length) - 1] as number;
    for (const [q, got] of [
      [0.5, p.p50],
      [0.95, p.p95],
      [0.99, p.p99],
    ] as const) {
      assert.ok(got !== null && Math.abs(got - truth(q)) / truth(q) < 0.13, `p${q * 100}: ${got} vs ${truth(q)}`);
    }
    assert.deepEqual(percentiles(new Array<number>(5).fill(0)), { p50: null, p95: null, p99: null });
  });
});

describe('dashboard with usage records off', () => {
  test('the overview says records are off (the page shows a banner) instead of looking like no traffic', async () => {
    const gw = await startGateway({
      configFile: { name: 'off.json', text: JSON.stringify({ usage: { enabled: false } }) },
    });
    try {
      const answer = await call(`${gw.url}/dashboard/api/overview`, { headers: authHeaders() });
      assert.equal(answer.status, 200);
      assert.equal(answer.json.usageRecords, false);
      assert.equal((answer.json.totals as { requests: number }).requests, 0);
      assert.match((await call(`${gw.url}/dashboard`)).text, /id="usage-off"[^>]*hidden/);
    } finally {
      await gw.close();
    }
  });
});
