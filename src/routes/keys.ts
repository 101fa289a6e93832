import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KeyRights, KeyService, KeyState, KeyView } from '../auth/key-service.js';
import { GatewayError } from '../errors/gateway-error.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

export interface KeyHandlers {
  read: Handler;
  write: Handler;
  update: Handler;
  revoke: Handler;
}

const MAX_PAGE = 200;
const DEFAULT_PAGE = 50;
const STATES: readonly KeyState[] = ['active', 'expired', 'revoked'];

const rightsProperties = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  routes: { type: 'array', minItems: 1, maxItems: 16, items: { type: 'string' } },
  models: { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'string', minLength: 1, maxLength: 256 } },
  limits: {
    type: ['object', 'null'],
    additionalProperties: false,
    properties: { requests_per_minute: { type: 'integer', minimum: 1 }, tokens_per_minute: { type: 'integer', minimum: 1 }, concurrent: { type: 'integer', minimum: 1 } },
  },
  budget: {
    type: ['object', 'null'],
    additionalProperties: false,
    required: ['period_seconds'],
    properties: { tokens: { type: 'integer', minimum: 1 }, cost_usd: { type: 'number', exclusiveMinimum: 0 }, period_seconds: { type: 'integer', minimum: 60 } },
  },
  expires_at: { type: ['string', 'null'], format: 'date-time' },
} as const;

/** The body of a new key. */
export const createKeySchema = { type: 'object', additionalProperties: false, required: ['name', 'models'], properties: rightsProperties } as const;
/** A change: any of the same fields; `null` removes limits, budget or expiry. */
export const updateKeySchema = { type: 'object', additionalProperties: false, minProperties: 1, properties: rightsProperties } as const;
/** A rotation: how long the old key keeps working (default one day). */
export const rotateKeySchema = { type: 'object', additionalProperties: false, properties: { grace_seconds: { type: 'integer', minimum: 0, maximum: 30 * 86_400 } } } as const;

/**
 * The admin keys API, `?route=keys` (admin token only: no scoped key, OAuth scope or Basic user can be given this
 * route). GET lists (or one with `id`); POST creates (or, with `id` and `action=rotate`, rotates); PATCH with `id`
 * changes rights; DELETE with `id` revokes. A key's secret is in the answer of its creation or rotation only.
 * Every change is one audit line in the log.
 */
export function makeKeyHandlers(store: KeyService | undefined): KeyHandlers {
  const keyService = (): KeyService => {
    if (!store) throw new GatewayError('capability_not_supported', { route: 'keys', problem: 'this gateway runs without a key store' });
    return store;
  };
  const audit = (request: FastifyRequest, action: string, view: KeyView) =>
    request.server.log.info({ audit: action, key_id: view.keyId, key_name: view.name, by: request.caller, request_id: request.id }, 'api key changed');
  return {
    async read(request, reply) {
      requireAdmin(request);
      const query = request.query as Record<string, unknown>;
      if (query.id !== undefined) return reply.type(request.responseType).send(shown(await keyService().get(idOf(query))));
      const { limit, after, state } = pageOf(query);
      const all = (await keyService().list()).filter((k) => state === undefined || k.state === state).sort((a, b) => a.createdMs - b.createdMs || a.keyId.localeCompare(b.keyId));
      const start = after === undefined ? 0 : all.findIndex((k) => k.keyId === after) + 1;
      if (after !== undefined && start === 0) throw new GatewayError('invalid_pagination_token', { parameter: 'next_token' });
      const data = all.slice(start, start + limit);
      const last = data[data.length - 1];
      return reply.type(request.responseType).send({ object: 'list', data: data.map(shown), ...(last && start + limit < all.length ? { next_token: last.keyId } : {}) });
    },
    async write(request, reply) {
      requireAdmin(request);
      const query = request.query as Record<string, unknown>;
      if (query.action === 'rotate') {
        const grace = (request.body as { grace_seconds?: number } | undefined)?.grace_seconds ?? 86_400;
        const { key, view, previous } = await keyService().rotate(idOf(query), grace * 1000);
        audit(request, 'key.rotated', view);
        return reply.code(201).type(request.responseType).send({ key, ...shown(view), previous: shown(previous) });
      }
      if (query.action !== undefined || query.id !== undefined) throw new GatewayError('invalid_query_parameter', { parameter: 'action', allowed: ['rotate'], problem: 'POST with an id rotates (action=rotate); without one it creates' });
      const { key, view } = await keyService().create(rightsOf(request.body as Record<string, unknown>, true) as KeyRights);
      audit(request, 'key.created', view);
      return reply.code(201).type(request.responseType).send({ key, ...shown(view) });
    },
    async update(request, reply) {
      requireAdmin(request);
      const validate = request.compileValidationSchema(updateKeySchema, 'body');
      if (!validate(request.body)) throw Object.assign(new Error('body validation failed'), { validation: validate.errors ?? [], validationContext: 'body' });
      const view = await keyService().update(idOf(request.query as Record<string, unknown>), rightsOf(request.body as Record<string, unknown>, false) as Parameters<KeyService['update']>[1]);
      audit(request, 'key.updated', view);
      return reply.type(request.responseType).send(shown(view));
    },
    async revoke(request, reply) {
      requireAdmin(request);
      const view = await keyService().revoke(idOf(request.query as Record<string, unknown>));
      audit(request, 'key.revoked', view);
      return reply.type(request.responseType).send(shown(view));
    },
  };
}

/** Only the administrator token manages keys (the route right alone is not enough, whatever grants it). */
function requireAdmin(request: FastifyRequest): void {
  if (request.principal?.kind !== 'admin') throw new GatewayError('route_not_allowed', { route: 'keys', problem: 'only the administrator token manages keys' });
}

function idOf(query: Record<string, unknown>): string {
  const id = query.id;
  if (typeof id !== 'string' || !/^[A-Za-z0-9]{1,64}$/.test(id)) throw new GatewayError('invalid_query_parameter', { parameter: 'id', problem: 'the id of a key is required (letters and digits), given once' });
  return id;
}

function pageOf(query: Record<string, unknown>): { limit: number; after: string | undefined; state: KeyState | undefined } {
  const limit = query.limit === undefined ? DEFAULT_PAGE : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw new GatewayError('invalid_query_parameter', { parameter: 'limit', problem: `a whole number from 1 to ${MAX_PAGE}` });
  const after = query.next_token;
  if (after !== undefined && (typeof after !== 'string' || after === '')) throw new GatewayError('invalid_pagination_token', { parameter: 'next_token' });
  const state = query.state;
  if (state !== undefined && !STATES.includes(state as KeyState)) throw new GatewayError('invalid_query_parameter', { parameter: 'state', allowed: [...STATES] });
  return { limit, after: after as string | undefined, state: state as KeyState | undefined };
}

/** The body's fields as rights (`expires_at` as milliseconds); on a change, `null` stays `null` (remove). */
function rightsOf(body: Record<string, unknown>, creating: boolean): Partial<Record<keyof KeyRights, unknown>> {
  const out: Partial<Record<keyof KeyRights, unknown>> = {};
  if (body.name !== undefined) out.name = body.name;
  if (body.routes !== undefined) out.routes = body.routes;
  else if (creating) out.routes = ['chat'];
  if (body.models !== undefined) out.models = body.models;
  for (const field of ['limits', 'budget'] as const) if (body[field] !== undefined) out[field] = body[field] === null && creating ? undefined : body[field];
  if (body.expires_at !== undefined) out.expiresMs = body.expires_at === null ? (creating ? undefined : null) : Date.parse(body.expires_at as string);
  return out;
}

/** A key as the API shows it: snake_case times in ISO 8601, never a hash. */
function shown(view: KeyView): Record<string, unknown> {
  return {
    id: view.keyId,
    name: view.name,
    environment: view.environment,
    state: view.state,
    routes: view.routes,
    models: view.models,
    limits: view.limits ?? null,
    budget: view.budget ?? null,
    created_at: new Date(view.createdMs).toISOString(),
    expires_at: view.expiresMs === undefined ? null : new Date(view.expiresMs).toISOString(),
    revoked_at: view.revokedMs === undefined ? null : new Date(view.revokedMs).toISOString(),
    rotated_from: view.rotatedFrom ?? null,
  };
}
