import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { KeyRights, KeyService, KeyState, KeyView } from '../auth/key-service.js';
import { GatewayError } from '../errors/gateway-error.js';
import {
  budgetShown,
  createKeySchema,
  keyChanged,
  rightsOf,
  rotateKeySchema,
  shown,
  usageShown,
  type KeyChange,
} from '../routes/keys-routes.js';
import type { Webhooks } from '../webhooks/webhooks.js';

/** The Keys page's usage period: the last 30 days. */
export const KEY_USAGE_MS = 30 * 86_400_000;
const STATES: readonly KeyState[] = ['active', 'expired', 'revoked'];
/** The default grace period of a rotation, as the admin API's. */
const DEFAULT_GRACE_SECONDS = 86_400;

export interface DashboardKeysOptions {
  /** The gateway's key service; without it (no key store) every keys call is `capability_not_supported`. */
  keys: KeyService | undefined;
  /** `key.created`, `key.rotated`, `key.revoked` events, as the admin API emits them. */
  webhooks?: Webhooks | undefined;
  /** Throws unless the request carries a dashboard session (or the admin bearer token). */
  signedIn: (request: FastifyRequest) => void;
  /** Throws when a browser's cross-site request says another Origin. */
  checkOrigin: (request: FastifyRequest) => void;
  now: () => number;
}

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: '^[A-Za-z0-9]{1,64}$' } },
} as const;
const emptyBody = { type: 'object', additionalProperties: false, properties: {} } as const;

/**
 * The Keys page's JSON API under /dashboard/api/keys: the admin keys API's service and shapes (docs/keys-api.md)
 * behind the dashboard's session. Every mutation must come from this origin (Origin checked) and be
 * `Content-Type: application/json` — a cross-site HTML form cannot send that type, and a cross-site script cannot
 * without a CORS preflight this gateway never answers — on top of the SameSite=Strict session cookie.
 */
export function mountDashboardKeys(app: FastifyInstance, options: DashboardKeysOptions): void {
  const service = (): KeyService => {
    if (!options.keys)
      throw new GatewayError('capability_not_supported', {
        feature: 'dashboard keys',
        problem: 'this gateway runs without a key store',
      });
    return options.keys;
  };
  // onRequest: before the body is read or validated, so a refused caller learns nothing about the body rules.
  const reading = async (request: FastifyRequest) => options.signedIn(request);
  const mutating = async (request: FastifyRequest) => {
    options.checkOrigin(request);
    requireJson(request);
    options.signedIn(request);
  };
  const noStore = (reply: FastifyReply) => reply.header('cache-control', 'no-store');

  const changed = (request: FastifyRequest, action: KeyChange, view: KeyView, previous?: KeyView) =>
    keyChanged(request, options.webhooks, { action, by: 'dashboard', view, previous });

  app.get('/dashboard/api/keys', { onRequest: reading }, async (request, reply) => {
    const state = stateOf((request.query as Record<string, unknown>).state);
    const keys = service();
    const nowMs = options.now();
    const fromMs = nowMs - KEY_USAGE_MS;
    // Newest first: a key just created or rotated is at the top.
    const views = (await keys.list(nowMs))
      .filter((k) => state === undefined || k.state === state)
      .sort((a, b) => b.createdMs - a.createdMs || a.keyId.localeCompare(b.keyId));
    const usage = keys.reportsUsage
      ? await keys.usageOf(
          views.map((v) => v.keyId),
          fromMs,
          nowMs + 1,
        )
      : undefined;
    const budgets = keys.reportsUsage ? await keys.budgetsLeft(views, nowMs) : undefined;
    return noStore(reply).send({
      object: 'list',
      usage_records: keys.reportsUsage,
      usage_from: new Date(fromMs).toISOString(),
      usage_to: new Date(nowMs).toISOString(),
      grantable_routes: [...keys.grantable],
      data: views.map((view) => {
        const used = usage?.get(view.keyId);
        const left = budgets?.get(view.keyId);
        return { ...shown(view), usage: used ? usageShown(used) : null, budget_left: left ? budgetShown(left) : null };
      }),
    });
  });

  app.post(
    '/dashboard/api/keys',
    { onRequest: mutating, schema: { body: createKeySchema } },
    async (request, reply) => {
      const { key, view } = await service().create(
        rightsOf(request.body as Record<string, unknown>, true) as KeyRights,
        options.now(),
      );
      changed(request, 'key.created', view);
      return noStore(reply)
        .code(201)
        .send({ key, ...shown(view) });
    },
  );

  app.post(
    '/dashboard/api/keys/:id/rotate',
    { onRequest: mutating, schema: { params: idParams, body: rotateKeySchema } },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const grace = (request.body as { grace_seconds?: number } | undefined)?.grace_seconds ?? DEFAULT_GRACE_SECONDS;
      const { key, view, previous } = await service().rotate(id, grace * 1000, options.now());
      changed(request, 'key.rotated', view, previous);
      return noStore(reply)
        .code(201)
        .send({ key, ...shown(view), previous: shown(previous) });
    },
  );

  app.post(
    '/dashboard/api/keys/:id/revoke',
    { onRequest: mutating, schema: { params: idParams, body: emptyBody } },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const { view, changed: revokedNow } = await service().revoke(id, options.now());
      // Revoking a revoked key changes nothing: no second audit line or event.
      if (revokedNow) changed(request, 'key.revoked', view);
      return noStore(reply).send(shown(view));
    },
  );
}

/**
 * A mutation's body must be declared JSON. A cross-site HTML form can only send urlencoded, multipart or
 * text/plain, and a cross-site fetch() with `application/json` needs a CORS preflight, which is never granted.
 * Checked on the header itself (not only by the body parser), so a body-less POST is refused too.
 */
function requireJson(request: FastifyRequest): void {
  const type = request.headers['content-type'];
  const essence = type?.split(';')[0]?.trim().toLowerCase();
  if (essence !== 'application/json')
    throw new GatewayError('unsupported_media_type', { accepted: ['application/json'] });
}

function stateOf(value: unknown): KeyState | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && STATES.includes(value as KeyState)) return value as KeyState;
  throw new GatewayError('invalid_query_parameter', { parameter: 'state', allowed: [...STATES] });
}
