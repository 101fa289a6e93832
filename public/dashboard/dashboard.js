// The operators' dashboard: plain script, no framework, no CDN. Every value from the gateway is written with
// textContent or as SVG attributes (model names and callers come from API callers: never parsed as HTML).
'use strict';

const SVG = 'http://www.w3.org/2000/svg';
const REFRESH_MS = 10_000;
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
    } catch {}
    throw new Error(message);
  }
  return response.status === 204 ? null : response.json();
}

function showLogin() {
  clearTimeout(timer);
  $('overview').hidden = true;
  $('controls').hidden = true;
  $('login').hidden = false;
  $('token').focus();
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
  $('login').hidden = true;
  $('overview').hidden = false;
  $('controls').hidden = false;
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
  $('updated').textContent = `updated ${data.generatedAt.slice(11, 19)} UTC`;
  requestsChart($('chart-requests'), data);
  latencyChart($('chart-latency'), data);
  bars($('chart-models'), data.byModel);
  bars($('chart-callers'), data.byCaller);
  bars($('chart-routes'), data.byRoute);
  upstreams(data.upstreams);
  webhooks(data.webhooks);
  failures(data.recentFailures);
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
    line.append(el('span', { class: 'num' }, `${fmtInt(tokens)} tok · ${fmtUsd(row.costUsd)}`));
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

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', (event) => void login(event).catch((error) => ($('login-error').textContent = error.message)));
  $('logout').addEventListener('click', () => void logout());
  $('window').addEventListener('change', () => void refresh());
  void refresh();
});
