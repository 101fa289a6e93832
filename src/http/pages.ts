/**
 * The two human-facing pages: the redirect at `/` (SPEC "What the service does": a page leads a browser from the
 * bare entry point to /v1/, with no change to a front web server) and the route index at `/v1/`.
 */

export interface RouteDescription {
  route: string;
  methods: readonly string[];
  auth: string;
  description: string;
}

export function redirectPage(location: string): string {
  const href = escapeHtml(location);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="0; url=${href}">
<title>LLM gateway</title></head>
<body><p>The API lives at <a href="${href}">${href}</a>.</p></body></html>
`;
}

export function indexPage(version: string, routes: readonly RouteDescription[]): string {
  const rows = routes
    .map(
      (r) =>
        `<tr><td><a href="/v1/?route=${escapeHtml(r.route)}"><code>/v1/?route=${escapeHtml(r.route)}</code></a></td>` +
        `<td>${escapeHtml(r.methods.join(', '))}</td><td>${escapeHtml(r.auth)}</td><td>${escapeHtml(r.description)}</td></tr>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>LLM gateway v1</title>
<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}</style></head>
<body><h1>LLM gateway <small>${escapeHtml(version)}</small></h1>
<p>API version <code>v1</code>. Choose the operation with the <code>route</code> query parameter.
Send the administrator token as <code>Authorization: Bearer &lt;ADMIN_TOKEN&gt;</code>, never in the URL.</p>
<table><thead><tr><th>Route</th><th>Methods</th><th>Auth</th><th>What it does</th></tr></thead>
<tbody>
${rows}
</tbody></table></body></html>
`;
}

/** True when the Accept header prefers HTML over JSON (a browser), per a simple reading of RFC 9110 12.5.1. */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  const html = accept.indexOf('text/html');
  if (html === -1) return false;
  const json = accept.indexOf('json');
  return json === -1 || html < json;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
