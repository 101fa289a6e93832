// The operators' dashboard: plain script, no framework, no CDN. Every value from the gateway is written with
// textContent or as SVG attributes (model names and callers come from API callers: never parsed as HTML).
'use strict';

const SVG = 'http://www.w3.org/2000/svg';
const REFRESH_MS = 10_000;
/** The Keys tab reads each key's 30 days of usage: refreshed less often (the Refresh button reads it now). */
const KEYS_REFRESH_MS = 60_000;
let timer;

const $ = (id) => document.getElementById(id);

function el(tag, attributes = {}, text) {
  const node = tag.startsWith('svg:') ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

const integer = new Intl.NumberFormat('en-US');
const fmtInt = (n) => integer.format(n);
const fmtMs = (n) => (n === null ? '–' : n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${n.toFixed(1)} ms`);
const fmtUsd = (n) => `$${n < 1 ? n.toFixed(6) : n.toFixed(2)}`;
/** What caching saved: negative (cache writes that cost more than reads saved) shown with a minus, not hidden. */
const fmtSaved = (n) => (n < 0 ? `−${fmtUsd(-n)}` : fmtUsd(n));
const fmtBytes = (n) => (n >= 1048576 ? `${(n / 1048576).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${fmtInt(n)} B`);
const fmtShare = (share) => (share === null ? '–' : `${(share * 100).toFixed(1)} %`);
const timeLabel = (iso, window) => (window === '7d' ? iso.slice(5, 10) + ' ' + iso.slice(11, 16) : iso.slice(11, 16));

async function api(path, options = {}) {
  const response = await fetch(path, { credentials: 'same-origin', ...options });
  if (response.status === 401) {
    showLogin();
    return undefined;
  }
  if (!response.ok) {
    let message = `HTTP ${response.status}`;
    try {
      const body = await response.json();
      message = `${body.code}: ${body.message}`;
      const problems = body.details?.errors;
      if (Array.isArray(problems) && problems.length > 0) message += ` (${problems.map((p) => `${p.field} ${p.problem}`).join('; ')})`;
    } catch {}
    throw new Error(message);
  }
  return response.status === 204 ? null : response.json();
}

function showLogin() {
  clearTimeout(timer);
  $('overview').hidden = true;
  $('keys').hidden = true;
  $('controls').hidden = true;
  $('tabs').hidden = true;
  hideSecret();
  hideConfirm();
  $('login').hidden = false;
  $('token').focus();
}

/** Overview or Keys: which section shows after login, and which the periodic refresh reloads. */
let tab = 'overview';

function showSignedIn() {
  $('login').hidden = true;
  $('controls').hidden = false;
  $('tabs').hidden = false;
  $('overview').hidden = tab !== 'overview';
  $('keys').hidden = tab !== 'keys';
  $('window-control').hidden = tab !== 'overview';
  $('updated').hidden = tab !== 'overview';
  for (const name of ['overview', 'keys']) $(`tab-${name}`).setAttribute('aria-selected', String(tab === name));
}

function openTab(name) {
  tab = name;
  showSignedIn();
  void refresh();
}

async function login(event) {
  event.preventDefault();
  const input = $('token');
  $('login-error').textContent = '';
  const response = await fetch('/dashboard/login', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: input.value }),
  });
  input.value = ''; // the token is not kept: the session is the HttpOnly cookie the answer set
  if (response.status !== 204) {
    let message = 'Login failed';
    try {
      const body = await response.json();
      message = body.message;
    } catch {}
    $('login-error').textContent = message;
    return;
  }
  await refresh();
}

async function logout() {
  await fetch('/dashboard/logout', { method: 'POST', credentials: 'same-origin' });
  showLogin();
}

let latestRefresh = 0;

async function refresh() {
  clearTimeout(timer);
  if (tab === 'keys') return refreshKeys();
  const ticket = ++latestRefresh; // an answer that arrives after a newer refresh started is dropped
  const window = $('window').value;
  let data;
  try {
    data = await api(`/dashboard/api/overview?window=${encodeURIComponent(window)}`);
  } catch (error) {
    if (ticket !== latestRefresh) return;
    $('updated').textContent = `refresh failed (${error.message})`;
    timer = setTimeout(refresh, REFRESH_MS);
    return;
  }
  if (ticket !== latestRefresh || !data) return;
  showSignedIn();
  render(data);
  document.body.dataset.loaded = 'true';
  timer = setTimeout(refresh, REFRESH_MS);
}

function render(data) {
  $('usage-off').hidden = data.usageRecords;
  const t = data.totals;
  $('t-requests').textContent = fmtInt(t.requests);
  $('t-errors').textContent = `${fmtInt(t.serverErrors)}${t.requests ? ` (${((100 * t.serverErrors) / t.requests).toFixed(1)} %)` : ''}`;
  $('t-refused').textContent = fmtInt(t.clientErrors);
  $('t-latency').textContent = `${fmtMs(t.p50)} / ${fmtMs(t.p95)} / ${fmtMs(t.p99)}`;
  $('t-tokens').textContent = fmtInt(t.promptTokens + t.completionTokens);
  $('t-cost').textContent = fmtUsd(t.costUsd);
  $('t-cache-share').textContent = fmtShare(t.cacheReadShare);
  $('t-cache-saved').textContent = fmtSaved(t.cacheSavingsUsd);
  $('updated').textContent = `updated ${data.generatedAt.slice(11, 19)} UTC`;
  requestsChart($('chart-requests'), data);
  latencyChart($('chart-latency'), data);
  bars($('chart-models'), data.byModel);
  bars($('chart-callers'), data.byCaller);
  bars($('chart-routes'), data.byRoute);
  upstreams(data.upstreams);
  webhooks(data.webhooks);
  batches(data.batches);
  vectorStores(data.vectorStores);
  toolCalls(data.toolCalls);
  configState(data.config);
  failures(data.recentFailures);
}

// The config file this worker runs, and the last reload it refused (the running config stays until a good file).
function configState(state) {
  const container = $('config');
  container.replaceChildren();
  if (!state) return;
  container.append(el('p', {}, `version ${state.version}, loaded ${state.loaded_at.replace('T', ' ').slice(0, 19)} UTC`));
  if (state.last_error) {
    const box = el('div', { class: 'badge fail', 'data-testid': 'config-error' }, `reload refused ${state.last_error.at.replace('T', ' ').slice(0, 19)} UTC: ${state.last_error.file}`);
    container.append(box);
    const list = el('ul');
    for (const problem of state.last_error.problems) list.append(el('li', {}, problem));
    container.append(list);
  }
}

const W = 600;
const H = 220;
const PAD = { left: 44, right: 8, top: 10, bottom: 24 };

function frame(container, max, series, window) {
  container.replaceChildren();
  const svg = el('svg:svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', preserveAspectRatio: 'none' });
  const plotH = H - PAD.top - PAD.bottom;
  for (let i = 0; i <= 4; i++) {
    const y = PAD.top + plotH - (plotH * i) / 4;
    svg.append(el('svg:line', { x1: PAD.left, x2: W - PAD.right, y1: y, y2: y, stroke: '#e3e5e9' }));
    const value = (max * i) / 4;
    svg.append(el('svg:text', { x: PAD.left - 4, y: y + 4, 'text-anchor': 'end' }, max >= 10 ? Math.round(value) : value.toFixed(1)));
  }
  const step = Math.max(1, Math.ceil(series.length / 6));
  series.forEach((point, i) => {
    if (i % step !== 0) return;
    svg.append(el('svg:text', { x: xOf(i, series.length), y: H - 6, 'text-anchor': 'middle' }, timeLabel(point.time, window)));
  });
  container.append(svg);
  return svg;
}

const xOf = (i, n) => PAD.left + ((W - PAD.left - PAD.right) * (i + 0.5)) / n;
const yOf = (v, max) => PAD.top + (H - PAD.top - PAD.bottom) * (1 - v / max);

function requestsChart(container, data) {
  const series = data.series;
  const max = Math.max(1, ...series.map((p) => p.requests));
  const svg = frame(container, max, series, data.window);
  const width = Math.max(1, ((W - PAD.left - PAD.right) / series.length) * 0.8);
  series.forEach((p, i) => {
    const x = xOf(i, series.length) - width / 2;
    let base = 0;
    for (const [value, color, kind] of [[p.requests - p.serverErrors - p.clientErrors, 'var(--ok)', 'ok'], [p.clientErrors, 'var(--refused)', 'refused'], [p.serverErrors, 'var(--failed)', 'failed']]) {
      if (value <= 0) continue;
      const y = yOf(base + value, max);
      const rect = el('svg:rect', { x, y, width, height: yOf(base, max) - y, fill: color, 'data-kind': kind, 'data-value': value });
      rect.append(el('svg:title', {}, `${p.time}: ${value} ${kind}`));
      svg.append(rect);
      base += value;
    }
  });
}

function latencyChart(container, data) {
  const series = data.series;
  const max = Math.max(1, ...series.map((p) => p.p99 ?? 0));
  const svg = frame(container, max, series, data.window);
  for (const [key, color] of [['p50', 'var(--p50)'], ['p95', 'var(--p95)'], ['p99', 'var(--p99)']]) {
    const points = series.map((p, i) => (p[key] === null ? null : `${xOf(i, series.length).toFixed(1)},${yOf(p[key], max).toFixed(1)}`)).filter(Boolean);
    if (points.length === 0) continue;
    svg.append(el('svg:polyline', { points: points.join(' '), fill: 'none', stroke: color, 'stroke-width': 2, 'data-series': key }));
    if (points.length === 1) {
      const [cx, cy] = points[0].split(',');
      svg.append(el('svg:circle', { cx, cy, r: 3, fill: color }));
    }
  }
}

function bars(container, rows) {
  container.replaceChildren();
  if (rows.length === 0) {
    container.append(el('p', { class: 'empty' }, 'No requests in this window.'));
    return;
  }
  const max = Math.max(1, ...rows.map((r) => r.promptTokens + r.completionTokens));
  for (const row of rows.slice(0, 12)) {
    const tokens = row.promptTokens + row.completionTokens;
    const line = el('div', { class: 'bar-row', 'data-name': row.group });
    line.append(el('span', { class: 'name', title: row.group }, row.group));
    const track = el('div', { class: 'bar-track' });
    const fill = el('div', { class: 'bar-fill' });
    fill.style.width = `${((100 * tokens) / max).toFixed(1)}%`; // CSSOM, allowed by the CSP (a style attribute is not)
    track.append(fill);
    line.append(track);
    // A model without a price (config or catalog) costs an unknown amount, not $0: said as such.
    const cost = row.unpriced
      ? el('span', { class: 'unpriced', 'data-testid': 'unpriced', title: 'No price in the config or the price catalog: cost unknown' }, 'unpriced')
      : fmtUsd(row.costUsd);
    const figures = el('span', { class: 'num' }, `${fmtInt(tokens)} tok · `);
    figures.append(cost);
    // Prompt caching, on a second line, only where the group read or wrote a provider's cache.
    if (row.cacheReadTokens > 0 || row.cacheWriteTokens > 0) {
      figures.append(el('span', { class: 'cache', 'data-testid': 'cache' }, `cache ${fmtShare(row.cacheReadShare)} · saved ${fmtSaved(row.cacheSavingsUsd)}`));
    }
    line.append(figures);
    container.append(line);
  }
}

function fillTable(table, rows, empty) {
  const body = table.tBodies[0];
  body.replaceChildren();
  if (rows.length === 0) {
    const tr = el('tr');
    tr.append(el('td', { colspan: table.tHead.rows[0].cells.length, class: 'empty' }, empty));
    body.append(tr);
    return;
  }
  for (const cells of rows) {
    const tr = el('tr');
    for (const cell of cells) tr.append(cell instanceof Node ? wrap(cell) : el('td', {}, cell ?? '–'));
    body.append(tr);
  }
}

function wrap(node) {
  const td = el('td');
  td.append(node);
  return td;
}

const badge = (text) => el('span', { class: `badge ${text}` }, text);

function upstreams(list) {
  // The probe only says the upstream answers; the attempts say whether calls to it work (a failing primary hidden
  // by its fallback shows as failed attempts and failovers).
  fillTable(
    $('upstreams'),
    list.map((u) => [
      u.name,
      badge(u.status),
      badge(u.circuit),
      u.latencyMs === null ? '–' : fmtMs(u.latencyMs),
      u.code,
      fmtInt(u.attempts.attempts),
      u.attempts.failed > 0 ? el('span', { class: 'badge fail', 'data-testid': 'failed-attempts' }, fmtInt(u.attempts.failed)) : '0',
      fmtInt(u.attempts.failovers),
      u.attempts.lastFailure ? `${u.attempts.lastFailure.code} ${u.attempts.lastFailure.at.replace('T', ' ').slice(0, 19)}` : null,
      u.pausedModels.length > 0 ? u.pausedModels.join(', ') : null,
    ]),
    'No upstream configured.',
  );
}

function failures(list) {
  fillTable(
    $('failures'),
    list.map((f) => [f.time.replace('T', ' ').slice(0, 19), String(f.status), f.code, f.route, f.model, f.upstream, f.caller, f.requestId]),
    'No failures recorded.',
  );
}

function batches(list) {
  fillTable(
    $('batches'),
    (list ?? []).map((b) => [
      b.id,
      b.api,
      b.caller,
      b.endpoint,
      b.status,
      b.runBy,
      `${fmtInt(b.done)} / ${fmtInt(b.total)}${b.total > 0 ? ` (${Math.floor((b.done / b.total) * 100)} %)` : ''}`,
      fmtInt(b.succeeded),
      fmtInt(b.errored),
      b.createdAt.replace('T', ' ').slice(0, 19),
    ]),
    'No batch in flight.',
  );
}

// Stores, files and bytes per caller (the callers holding the most bytes first), and everyone's on the last row.
function vectorStores(state) {
  $('vector-stores-card').hidden = !state;
  if (!state) return;
  const cells = (caller, v) => [caller, fmtInt(v.stores), fmtInt(v.files), fmtInt(v.inProgress), fmtInt(v.failed), fmtBytes(v.bytes)];
  const rows = state.byCaller.map((c) => cells(c.caller, c));
  if (rows.length > 0) rows.push(cells('all callers', state.total));
  fillTable($('vector-stores'), rows, 'No vector store.');
}

// MCP tool calls per caller, server and tool (the most called first); refused calls count as errors too.
function toolCalls(state) {
  $('tool-calls-card').hidden = !state;
  if (!state) return;
  const t = state.total;
  $('tool-calls-total').textContent = `${fmtInt(t.calls)} calls, ${fmtInt(t.errors)} errors (${fmtInt(t.refused)} refused)`;
  const rows = state.rows.map((r) => [
    r.caller,
    r.server,
    r.tool,
    fmtInt(r.calls),
    fmtInt(r.errors),
    fmtInt(r.refused),
    fmtMs(r.p50Ms),
    fmtMs(r.p99Ms),
    fmtBytes(r.bytesIn),
    fmtBytes(r.bytesOut),
  ]);
  fillTable($('tool-calls'), rows, 'No tool call in this window.');
}

function webhooks(state) {
  const container = $('webhooks');
  container.replaceChildren();
  if (!state) {
    container.append(el('p', { class: 'empty' }, 'No webhook subscription configured.'));
    return;
  }
  const subs = el('table');
  subs.append(el('thead'));
  subs.tHead.append(headerRow(['Subscription', 'Waiting deliveries']));
  subs.append(el('tbody'));
  for (const s of state.subscriptions) subs.tBodies[0].append(row([s.id, fmtInt(s.backlog)]));
  container.append(subs);
  container.append(el('h3', {}, `Dead letters (${state.deadLetters.length}${state.deadLetters.length >= 20 ? '+' : ''})`));
  const dead = el('table', { 'data-testid': 'dead-letters' });
  dead.append(el('thead'));
  dead.tHead.append(headerRow(['Event', 'Subscription', 'Attempts', 'Last error', 'Created (UTC)']));
  dead.append(el('tbody'));
  fillTable(dead, state.deadLetters.map((d) => [d.event, d.subscription, String(d.attempts), d.lastError, d.createdAt.replace('T', ' ').slice(0, 19)]), 'None.');
  container.append(dead);
}

function headerRow(names) {
  const tr = el('tr');
  for (const name of names) tr.append(el('th', {}, name));
  return tr;
}

function row(cells) {
  const tr = el('tr');
  for (const cell of cells) tr.append(el('td', {}, cell));
  return tr;
}

// ---- Keys: the list with 30-day usage and budget left, create, rotate, revoke. A new secret is shown once. ----

const DAY_S = 86_400;
const fmtDuration = (seconds) => (seconds % DAY_S === 0 ? `${seconds / DAY_S} d` : seconds % 3600 === 0 ? `${seconds / 3600} h` : `${seconds} s`);
const fmtTime = (iso) => (iso ? iso.replace('T', ' ').slice(0, 19) : null);
const splitList = (text) => text.split(',').map((part) => part.trim()).filter((part) => part !== '');

async function refreshKeys() {
  clearTimeout(timer);
  const ticket = ++latestRefresh; // shared with the overview: a late answer of the other tab is dropped
  const state = $('keys-state').value;
  let data;
  try {
    data = await api(`/dashboard/api/keys${state ? `?state=${encodeURIComponent(state)}` : ''}`);
  } catch (error) {
    if (ticket !== latestRefresh) return;
    showSignedIn();
    keysError(error.message);
    timer = setTimeout(refresh, KEYS_REFRESH_MS);
    return;
  }
  if (ticket !== latestRefresh || !data) return;
  showSignedIn();
  keysError('');
  renderKeys(data);
  document.body.dataset.keysLoaded = String(Number(document.body.dataset.keysLoaded ?? 0) + 1);
  timer = setTimeout(refresh, KEYS_REFRESH_MS);
}

function keysError(message) {
  $('keys-error').textContent = message;
  $('keys-error').hidden = message === '';
}

function renderKeys(data) {
  $('keys-usage-off').hidden = data.usage_records;
  $('keys-updated').textContent = `usage ${data.usage_from.slice(0, 10)} → ${data.usage_to.slice(0, 10)} · updated ${data.usage_to.slice(11, 19)} UTC`;
  routeChoices(data.grantable_routes);
  const table = $('keys-table');
  const body = table.tBodies[0];
  body.replaceChildren();
  if (data.data.length === 0) {
    const tr = el('tr');
    tr.append(el('td', { colspan: table.tHead.rows[0].cells.length, class: 'empty' }, 'No key.'));
    body.append(tr);
    return;
  }
  for (const key of data.data) {
    const tr = el('tr', { 'data-key-id': key.id, 'data-state': key.state });
    const name = el('td', { 'data-col': 'name' });
    name.append(el('span', {}, key.name));
    if (key.rotated_from) name.append(el('div', { class: 'muted' }, `rotated from ${key.rotated_from}`));
    tr.append(name);
    const id = el('td', { 'data-col': 'id' });
    id.append(el('code', {}, key.id));
    const state = el('td', { 'data-col': 'state' });
    state.append(el('span', { class: `badge ${key.state}` }, key.state));
    tr.append(id, state);
    tr.append(el('td', { 'data-col': 'models' }, key.models.join(', ')));
    tr.append(el('td', { 'data-col': 'routes' }, key.routes.join(', ')));
    tr.append(el('td', { 'data-col': 'mcp-tools' }, key.mcp_tools.length > 0 ? key.mcp_tools.join(', ') : '–'));
    const usage = key.usage;
    tr.append(el('td', { class: 'num', 'data-col': 'requests' }, usage ? fmtInt(usage.requests) : '–'));
    tr.append(el('td', { class: 'num', 'data-col': 'tokens' }, usage ? fmtInt(usage.total_tokens) : '–'));
    tr.append(el('td', { class: 'num', 'data-col': 'cost' }, usage ? fmtUsd(usage.cost_usd) : '–'));
    tr.append(el('td', { 'data-col': 'budget' }, budgetText(key)));
    const expiry = key.revoked_at ? `revoked ${fmtTime(key.revoked_at)}` : (fmtTime(key.expires_at) ?? 'never');
    tr.append(el('td', { 'data-col': 'expires' }, expiry));
    const actions = el('td', { 'data-col': 'actions' });
    if (key.state === 'active') {
      const rotate = el('button', { type: 'button', 'data-action': 'rotate' }, 'Rotate');
      rotate.addEventListener('click', () => askConfirm('rotate', key));
      const revoke = el('button', { type: 'button', class: 'danger', 'data-action': 'revoke' }, 'Revoke');
      revoke.addEventListener('click', () => askConfirm('revoke', key));
      actions.append(rotate, revoke);
    }
    tr.append(actions);
    body.append(tr);
  }
}

function budgetText(key) {
  const budget = key.budget;
  if (!budget) return '–';
  const per = `per ${fmtDuration(budget.period_seconds)}`;
  const left = key.budget_left;
  if (!left) {
    const limits = [budget.tokens !== undefined ? `${fmtInt(budget.tokens)} tok` : null, budget.cost_usd !== undefined ? fmtUsd(budget.cost_usd) : null].filter(Boolean);
    return `${limits.join(' · ')} ${per} (use not known)`;
  }
  const parts = [left.tokens_left !== null ? `${fmtInt(left.tokens_left)} tok` : null, left.cost_left_usd !== null ? fmtUsd(left.cost_left_usd) : null].filter(Boolean);
  return `${parts.join(' · ')} left ${per}`;
}

/** The route checkboxes of the form, from the routes the gateway says a key can be given (chat checked). */
function routeChoices(routes) {
  const fieldset = $('key-routes');
  if (fieldset.dataset.built === 'true' || !Array.isArray(routes)) return;
  for (const route of routes) {
    const label = el('label', { class: 'check' });
    const box = el('input', { type: 'checkbox', name: 'routes', value: route, 'data-route': route });
    box.defaultChecked = route === 'chat'; // the attribute too: a form reset checks chat again
    box.checked = box.defaultChecked;
    label.append(box, document.createTextNode(` ${route}`));
    fieldset.append(label);
  }
  fieldset.dataset.built = 'true';
}

function formBody() {
  const body = { name: $('key-name').value.trim(), models: splitList($('key-models').value) };
  const routes = [...document.querySelectorAll('#key-routes input[name=routes]:checked')].map((box) => box.value);
  if (routes.length > 0) body.routes = routes;
  const tools = splitList($('key-mcp-tools').value);
  if (tools.length > 0) body.mcp_tools = tools;
  const tokens = $('key-budget-tokens').value;
  const cost = $('key-budget-cost').value;
  if (tokens !== '' || cost !== '') {
    body.budget = { period_seconds: Number($('key-budget-period').value) };
    if (tokens !== '') body.budget.tokens = Number(tokens);
    if (cost !== '') body.budget.cost_usd = Number(cost);
  }
  const expires = $('key-expires').value;
  if (expires !== '') {
    const when = new Date(expires); // datetime-local: the browser's local time
    if (Number.isNaN(when.getTime())) throw new Error('the expiry is not a date and time');
    body.expires_at = when.toISOString();
  }
  return body;
}

function post(path, body) {
  return api(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function createKey(event) {
  event.preventDefault();
  $('key-form-error').textContent = '';
  const created = await post('/dashboard/api/keys', formBody());
  if (!created) return;
  $('key-form').reset();
  showSecret(`Key “${created.name}” created (id ${created.id})`, created.key, '');
  await refreshKeys();
}

/** The confirmation panel of a rotation or a revocation (a page element: no window.confirm). */
let pending;

function askConfirm(action, key) {
  pending = { action, id: key.id };
  $('key-confirm-error').textContent = '';
  $('key-confirm-text').textContent =
    action === 'rotate'
      ? `Rotate key “${key.name}” (${key.id})? A new key with the same rights is made and shown once.`
      : `Revoke key “${key.name}” (${key.id})? Calls with it are refused from now on (every instance within its key cache, 5 s by default). This cannot be undone.`;
  $('key-confirm-grace-label').hidden = action !== 'rotate';
  $('key-confirm-yes').textContent = action === 'rotate' ? 'Rotate' : 'Revoke';
  $('key-confirm-yes').dataset.action = action;
  $('key-confirm').hidden = false;
  $('key-confirm-yes').focus();
}

function hideConfirm() {
  pending = undefined;
  $('key-confirm').hidden = true;
}

async function confirmAction() {
  if (!pending) return;
  const { action, id } = pending;
  $('key-confirm-error').textContent = '';
  if (action === 'rotate') {
    const rotated = await post(`/dashboard/api/keys/${encodeURIComponent(id)}/rotate`, { grace_seconds: Number($('key-confirm-grace').value) });
    if (!rotated) return;
    hideConfirm();
    const until = fmtTime(rotated.previous.expires_at);
    showSecret(`Key “${rotated.name}” rotated: new key ${rotated.id}`, rotated.key, `The old key ${rotated.previous.id} works until ${until} UTC.`);
  } else {
    const revoked = await post(`/dashboard/api/keys/${encodeURIComponent(id)}/revoke`, {});
    if (!revoked) return;
    hideConfirm();
  }
  await refreshKeys();
}

function showSecret(title, secret, note) {
  $('key-secret-title').textContent = title;
  $('key-secret-value').textContent = secret;
  $('key-secret-copied').textContent = '';
  $('key-secret-previous').textContent = note;
  $('key-secret').hidden = false;
  $('key-secret').scrollIntoView({ block: 'nearest' });
}

/** Hiding the panel also removes the secret from the page: it is shown once, and never fetched again. */
function hideSecret() {
  $('key-secret-value').textContent = '';
  $('key-secret-copied').textContent = '';
  $('key-secret').hidden = true;
}

async function copySecret() {
  const node = $('key-secret-value');
  const secret = node.textContent;
  try {
    if (!navigator.clipboard) throw new Error('no clipboard');
    await navigator.clipboard.writeText(secret);
    $('key-secret-copied').textContent = 'Copied to the clipboard.';
  } catch {
    // No clipboard (not a secure context, or permission refused): select the text for Ctrl+C / ⌘C.
    const range = document.createRange();
    range.selectNodeContents(node);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    $('key-secret-copied').textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
  }
}

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', (event) => void login(event).catch((error) => ($('login-error').textContent = error.message)));
  $('logout').addEventListener('click', () => void logout());
  $('window').addEventListener('change', () => void refresh());
  $('tab-overview').addEventListener('click', () => openTab('overview'));
  $('tab-keys').addEventListener('click', () => openTab('keys'));
  $('keys-state').addEventListener('change', () => void refreshKeys());
  $('keys-refresh').addEventListener('click', () => void refreshKeys());
  $('key-form').addEventListener('submit', (event) => void createKey(event).catch((error) => ($('key-form-error').textContent = error.message)));
  $('key-confirm-yes').addEventListener('click', () => void confirmAction().catch((error) => ($('key-confirm-error').textContent = error.message)));
  $('key-confirm-no').addEventListener('click', hideConfirm);
  $('key-secret-copy').addEventListener('click', () => void copySecret());
  $('key-secret-done').addEventListener('click', hideSecret);
  void refresh();
});
