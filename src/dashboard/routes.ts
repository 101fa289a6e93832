import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import type { AdminAuthenticator } from '../auth/admin-auth.js';
import type { KeyService } from '../auth/key-service.js';
import type { Webhooks } from '../webhooks/webhooks.js';
import { mountDashboardKeys } from './key-routes.js';
import { buildOverview, WINDOWS, type OverviewSources, type WindowName } from './overview.js';
import { cookieValue, DashboardSessions, SESSION_COOKIE } from './session.js';

/** The page, its script and its style: files of the package (public/dashboard), no CDN, nothing fetched from outside. */
const ASSETS = {
  'index.html': 'text/html; charset=utf-8',
  'dashboard.js': 'text/javascript; charset=utf-8',
  'dashboard.css': 'text/css; charset=utf-8',
} as const;

const PAGE_HEADERS = {
  // Only this origin's own script and style; no inline script, no framing, no form posts elsewhere.
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

export interface DashboardOptions {
  admin: AdminAuthenticator;
  adminTokens: readonly string[];
  sessionTtlMs: number;
  sources: OverviewSources;
  /** The Keys page's service (none: no key store, and the Keys API answers `capability_not_supported`). */
  keys?: KeyService | undefined;
  /** Where key changes made on the page are announced (`key.created`, `key.rotated`, `key.revoked`). */
  webhooks?: Webhooks | undefined;
  now?: () => number;
}

/**
 * The operators' dashboard at /dashboard: log in with the admin token (POSTed once, answered with an HttpOnly,
 * SameSite=Strict session cookie: the token is never kept by the page nor put in a URL), then one JSON document
 * (/dashboard/api/overview) feeds every chart. The API also accepts the admin bearer token, for scripts.
 */
export function mountDashboard(app: FastifyInstance, options: DashboardOptions): void {
  const now = options.now ?? Date.now;
  const sessions = new DashboardSessions(options.adminTokens, options.sessionTtlMs, now);
  const directory = new URL('../../public/dashboard/', import.meta.url);
  const files = new Map(
    Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(new URL(name, directory)) }]),
  );

  const serve = (name: keyof typeof ASSETS) => async (_request: FastifyRequest, reply: FastifyReply) => {
    const file = files.get(name);
    if (!file) throw new GatewayError('not_found', { path: `/dashboard/${name}` });
    return reply.headers(PAGE_HEADERS).header('cache-control', 'no-cache').type(file.type).send(file.body);
  };
  app.get('/dashboard', serve('index.html'));
  app.get('/dashboard/dashboard.js', serve('dashboard.js'));
  app.get('/dashboard/dashboard.css', serve('dashboard.css'));

  app.post(
    '/dashboard/login',
    {
      schema: {
        body: {
          type: 'object',
          required: ['token'],
          additionalProperties: false,
          properties: { token: { type: 'string', minLength: 1, maxLength: 4096 } },
        },
      },
    },
    async (request, reply) => {
      checkOrigin(request);
      options.admin.authenticate(`Bearer ${(request.body as { token: string }).token}`);
      request.log.info({ event: 'dashboard_login' }, 'dashboard session opened');
      return reply
        .header('set-cookie', cookie(request, sessions.issue(), Math.floor(options.sessionTtlMs / 1000)))
        .header('cache-control', 'no-store')
        .code(204)
        .send();
    },
  );

  app.post('/dashboard/logout', async (request, reply) => {
    checkOrigin(request);
    return reply
      .header('set-cookie', cookie(request, '', 0))
      .header('cache-control', 'no-store')
      .code(204)
      .send();
  });

  /** The data API's check: a valid session cookie, or else the admin bearer token (for scripts). */
  const signedIn = (request: FastifyRequest): void => {
    const session = cookieValue(request.headers.cookie, SESSION_COOKIE);
    if (sessions.valid(session)) return;
    if (request.headers.authorization !== undefined) options.admin.authenticate(request.headers.authorization);
    else
      throw new GatewayError('authentication_required', {
        login: 'POST /dashboard/login with {"token": "<ADMIN_TOKEN>"}, or send Authorization: Bearer <ADMIN_TOKEN>',
      });
  };

  app.get('/dashboard/api/overview', async (request, reply) => {
    signedIn(request);
    const window = readWindow((request.query as Record<string, unknown>).window);
    return reply.header('cache-control', 'no-store').send(await buildOverview(options.sources, window, now()));
  });

  mountDashboardKeys(app, { keys: options.keys, webhooks: options.webhooks, signedIn, checkOrigin, now });
}

function readWindow(value: unknown): WindowName {
  if (value === undefined) return '1h';
  if (typeof value === 'string' && Object.hasOwn(WINDOWS, value)) return value as WindowName;
  throw new GatewayError('invalid_query_parameter', {
    parameter: 'window',
    allowed: Object.keys(WINDOWS),
    got: String(value).slice(0, 40),
  });
}

/** `Secure` whenever the page came over HTTPS (directly, or through a trusted proxy's X-Forwarded-Proto). */
function cookie(request: FastifyRequest, value: string, maxAgeSeconds: number): string {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  return `${SESSION_COOKIE}=${value}; Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

/**
 * A browser's cross-site POST carries its Origin: refuse one that is not this gateway (SameSite=Strict does the
 * rest). This gateway's host is `request.host`, which follows X-Forwarded-Host from a trusted proxy; default
 * ports are ignored on both sides (`https://gw.example` and `gw.example:443` are the same site).
 */
function checkOrigin(request: FastifyRequest): void {
  const origin = request.headers.origin;
  if (origin === undefined) return;
  let originHost: string | undefined;
  try {
    originHost = new URL(origin).host; // URL drops a default port
  } catch {
    originHost = undefined;
  }
  const own = withoutDefaultPort(request.host, request.protocol);
  if (originHost === undefined || originHost.toLowerCase() !== own.toLowerCase()) {
    throw new GatewayError('bad_request', {
      reason: 'cross-origin dashboard request refused',
      origin: origin.slice(0, 200),
    });
  }
}

function withoutDefaultPort(host: string, protocol: string): string {
  const port = protocol === 'https' ? ':443' : ':80';
  return host.endsWith(port) ? host.slice(0, -port.length) : host;
}
