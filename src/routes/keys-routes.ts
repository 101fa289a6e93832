import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  KEY_LIMIT_MAXIMA,
  type BudgetLeft,
  type KeyRights,
  type KeyService,
  type KeyState,
  type KeyUsage,
  type KeyView,
} from '../auth/key-service.js';
import { MAX_TOOL_PATTERN_CHARS, MAX_TOOL_PATTERNS } from '../core/mcp/tool-rights.js';
import { parsePageLimit } from '../core/page-limit.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { Webhooks } from '../webhooks/webhooks.js';
import { EVENT } from '../webhooks/gateway-events.js';
import type { SealedIdempotency } from './sealed-idempotency.js';
import { assertValid } from '../http/bounded-validation.js';

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
/** A usage report's default period: the last 30 days. */
const DEFAULT_USAGE_MS = 30 * 86_400_000;

export interface KeyHandlerOptions {
  /** Idempotency-Key on create and rotate (the stored answer sealed: it carries the new secret). */
  idempotency: SealedIdempotency;
  /** `key.created`, `key.rotated`, `key.revoked` events. */
  webhooks?: Webhooks;
}

const rightsProperties = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  routes: { type: 'array', minItems: 1, maxItems: 16, uniqueItems: true, items: { type: 'string' } },
  models: {
    type: 'array',
    minItems: 1,
    maxItems: 1000,
    uniqueItems: true,
    items: { type: 'string', minLength: 1, maxLength: 256 },
  },
  limits: {
    type: ['object', 'null'],
    additionalProperties: false,
    minProperties: 1,
    properties: {
      requests_per_minute: { type: 'integer', minimum: 1, maximum: KEY_LIMIT_MAXIMA.requestsPerMinute },
      tokens_per_minute: { type: 'integer', minimum: 1, maximum: KEY_LIMIT_MAXIMA.tokensPerMinute },
      concurrent: { type: 'integer', minimum: 1, maximum: KEY_LIMIT_MAXIMA.concurrent },
      mcp_calls_per_minute: { type: 'integer', minimum: 1, maximum: KEY_LIMIT_MAXIMA.requestsPerMinute },
      mcp_concurrent: { type: 'integer', minimum: 1, maximum: KEY_LIMIT_MAXIMA.concurrent },
    },
  },
  budget: {
    type: ['object', 'null'],
    additionalProperties: false,
    required: ['period_seconds'],
    anyOf: [{ required: ['tokens'] }, { required: ['cost_usd'] }],
    properties: {
      tokens: { type: 'integer', minimum: 1, maximum: KEY_LIMIT_MAXIMA.budgetTokens },
      cost_usd: { type: 'number', exclusiveMinimum: 0, maximum: KEY_LIMIT_MAXIMA.budgetUsd },
      period_seconds: { type: 'integer', minimum: 60, maximum: KEY_LIMIT_MAXIMA.periodSeconds },
    },
  },
  /** MCP tools, `<server>/<tool glob>` each (the key-service names a bad one as `mcp_tools[i]`); [] or null: none. */
  mcp_tools: {
    type: ['array', 'null'],
    maxItems: MAX_TOOL_PATTERNS,
    uniqueItems: true,
    items: { type: 'string', maxLength: MAX_TOOL_PATTERN_CHARS },
  },
  expires_at: { type: ['string', 'null'], format: 'date-time' },
} as const;

/** The body of a new key. */
export const createKeySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'models'],
  properties: rightsProperties,
} as const;
/** A change: any of the same fields; `null` removes limits, budget or expiry. */
export const updateKeySchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: rightsProperties,
} as const;
/** A rotation: how long the old key keeps working (default one day). */
export const rotateKeySchema = {
  type: 'object',
  additionalProperties: false,
  properties: { grace_seconds: { type: 'integer', minimum: 0, maximum: 30 * 86_400 } },
} as const;

/**
 * The admin keys API, `?route=keys` (admin token only: no scoped key, OAuth scope or Basic user can be given this
 * route). GET lists (or one with `id`); POST creates (or, with `id` and `action=rotate`, rotates); PATCH with `id`
 * changes rights; DELETE with `id` revokes. A key's secret is in the answer of its creation or rotation only.
 * Every change is one audit line in the log.
 */
export function makeKeyHandlers(store: KeyService | undefined, options: KeyHandlerOptions): KeyHandlers {
  const keyService = (): KeyService => {
    if (!store)
      throw new GatewayError('capability_not_supported', {
        route: 'keys',
        problem: 'this gateway runs without a key store',
      });
    return store;
  };
  const changed = (request: FastifyRequest, action: KeyChange, view: KeyView, previous?: KeyView, fields?: string[]) =>
    keyChanged(request, options.webhooks, { action, by: request.caller, view, previous, fields });
  return {
    async read(request, reply) {
      requireAdmin(request);
      void reply.header('cache-control', 'no-store');
      const query = request.query as Record<string, unknown>;
      if (query.action === 'usage')
        return reply.type(request.responseType).send(await usageReport(keyService(), idOf(query), query));
      if (query.action !== undefined)
        throw new GatewayError('invalid_query_parameter', {
          parameter: 'action',
          allowed: ['usage'],
          problem: 'GET with an id reads a key, or its usage with action=usage',
        });
      if (query.id !== undefined)
        return reply.type(request.responseType).send(shown(await keyService().get(idOf(query))));
      const { limit, after, state } = pageOf(query);
      const environment = query.environment;
      if (environment !== undefined && environment !== keyService().managedEnvironment) {
        // Environments are kept apart: this gateway neither sees nor manages another environment's keys.
        throw new GatewayError('invalid_query_parameter', {
          parameter: 'environment',
          allowed: [keyService().managedEnvironment],
          problem: "a gateway manages its own environment's keys only: ask that environment's gateway",
        });
      }
      const all = (await keyService().list()).filter((k) => state === undefined || k.state === state).sort(byCreation);
      // The cursor is a position in creation order, not a key of the page: a key that changes state (or goes)
      // between two pages does not break the next one.
      const start = after === undefined ? 0 : all.findIndex((k) => byCreation(k, after) > 0);
      const rest = start === -1 ? [] : all.slice(start);
      const data = rest.slice(0, limit);
      const last = data[data.length - 1];
      return reply.type(request.responseType).send({
        object: 'list',
        data: data.map(shown),
        ...(last && rest.length > limit ? { next_token: cursorOf(last) } : {}),
      });
    },
    async write(request, reply) {
      requireAdmin(request);
      void reply.header('cache-control', 'no-store');
      const query = request.query as Record<string, unknown>;
      if (query.action === 'rotate') {
        const id = idOf(query);
        const grace = (request.body as { grace_seconds?: number } | undefined)?.grace_seconds ?? 86_400;
        return options.idempotency.run(request, reply, { action: 'rotate', id, body: request.body }, async () => {
          const { key, view, previous } = await keyService().rotate(id, grace * 1000);
          changed(request, 'key.rotated', view, previous);
          return { status: 201, body: { key, ...shown(view), previous: shown(previous) } };
        });
      }
      checkKeyWriteQuery(query);
      return options.idempotency.run(request, reply, { action: 'create', body: request.body }, async () => {
        const { key, view } = await keyService().create(
          rightsOf(request.body as Record<string, unknown>, true) as KeyRights,
        );
        changed(request, 'key.created', view);
        return { status: 201, body: { key, ...shown(view) } };
      });
    },
    async update(request, reply) {
      requireAdmin(request);
      void reply.header('cache-control', 'no-store');
      const id = idOf(request.query as Record<string, unknown>);
      assertValid(request.compileValidationSchema(updateKeySchema, 'body'), request.body);
      const { view, changed: fields } = await keyService().update(
        id,
        rightsOf(request.body as Record<string, unknown>, false) as Parameters<KeyService['update']>[1],
      );
      // A change that changes nothing writes nothing: no audit line, no event.
      if (fields.length > 0) changed(request, 'key.updated', view, undefined, fields);
      return reply.type(request.responseType).send(shown(view));
    },
    async revoke(request, reply) {
      requireAdmin(request);
      void reply.header('cache-control', 'no-store');
      const id = idOf(request.query as Record<string, unknown>);
      const { view, changed: revokedNow } = await keyService().revoke(id);
      // Revoking a revoked key changes nothing: no second audit line or event.
      if (revokedNow) changed(request, 'key.revoked', view);
      return reply.type(request.responseType).send(shown(view));
    },
  };
}

export type KeyChange = 'key.created' | 'key.updated' | 'key.rotated' | 'key.revoked';

/** One change of a key: what was done, by whom, the key as it is now (and was before), the fields changed. */
export interface ChangedKey {
  action: KeyChange;
  by: string;
  view: KeyView;
  previous?: KeyView | undefined;
  /** The fields an update changed, by their names in the store. */
  fields?: string[] | undefined;
}

/**
 * A key changed (the admin API or the dashboard): one audit line, and the change's signed event (created,
 * rotated, revoked; never the secret: events carry the key as listed).
 */
export function keyChanged(
  request: FastifyRequest,
  webhooks: Webhooks | undefined,
  { action, by, view, previous, fields }: ChangedKey,
): void {
  const changedFields = fields?.map((f) => API_FIELD[f] ?? f);
  request.server.log.info(
    {
      audit: action,
      key_id: view.keyId,
      key_name: view.name,
      by,
      request_id: request.id,
      ...(changedFields ? { changed: changedFields } : {}),
    },
    'api key changed',
  );
  const kind = EVENT_OF[action];
  if (webhooks?.wants(kind)) {
    void webhooks.emit(kind, {
      request_id: request.id,
      by,
      key: shown(view),
      ...(previous ? { previous: shown(previous) } : {}),
      ...(changedFields ? { changed: changedFields } : {}),
    });
  }
}

/** The store's field names the API spells otherwise. */
const API_FIELD: Readonly<Record<string, string>> = { expiresMs: 'expires_at', mcpTools: 'mcp_tools' };

const EVENT_OF: Record<KeyChange, string> = {
  'key.created': EVENT.keyCreated,
  'key.updated': EVENT.keyUpdated,
  'key.rotated': EVENT.keyRotated,
  'key.revoked': EVENT.keyRevoked,
};

/** A POST's query: none (create) or `id` + `action=rotate`; checked before the body, so a wrong action is named as such. */
export function checkKeyWriteQuery(query: Record<string, unknown>): void {
  if (query.action === 'rotate' && query.id !== undefined) return;
  if (query.action === undefined && query.id === undefined) return;
  if (query.action !== undefined && query.action !== 'rotate')
    throw new GatewayError('invalid_query_parameter', {
      parameter: 'action',
      allowed: ['rotate'],
      problem: 'POST with an id rotates (action=rotate); without one it creates',
    });
  throw new GatewayError('invalid_query_parameter', {
    parameter: query.id === undefined ? 'id' : 'action',
    problem: 'POST with an id rotates (action=rotate); without one it creates',
  });
}

/** Creation order: oldest first, ties by id. `b` may be a cursor (its creation time and id). */
function byCreation(a: Pick<KeyView, 'createdMs' | 'keyId'>, b: Pick<KeyView, 'createdMs' | 'keyId'>): number {
  return a.createdMs - b.createdMs || (a.keyId < b.keyId ? -1 : a.keyId > b.keyId ? 1 : 0);
}

function cursorOf(view: Pick<KeyView, 'createdMs' | 'keyId'>): string {
  return Buffer.from(`${view.createdMs}:${view.keyId}`).toString('base64url');
}

/** `GET ?route=keys&id=<id>&action=usage[&from=<ISO>][&to=<ISO>]`: requests, tokens and spend, and budget left. */
async function usageReport(
  service: KeyService,
  id: string,
  query: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const nowMs = Date.now();
  const toMs = timeOf(query, 'to') ?? nowMs;
  const fromMs = timeOf(query, 'from') ?? toMs - DEFAULT_USAGE_MS;
  if (fromMs >= toMs)
    throw new GatewayError('invalid_query_parameter', { parameter: 'from', problem: 'must be before to' });
  const view = await service.get(id, nowMs);
  const usage = (await service.usageOf([id], fromMs, toMs)).get(id) as KeyUsage;
  const budget = (await service.budgetsLeft([view], nowMs)).get(id);
  return {
    object: 'key.usage',
    id,
    from: new Date(fromMs).toISOString(),
    to: new Date(toMs).toISOString(),
    ...usageShown(usage),
    budget: budget ? budgetShown(budget) : null,
  };
}

export function usageShown(usage: KeyUsage): Record<string, number | null> {
  return {
    requests: usage.requests,
    errors: usage.errors,
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    cache_read_tokens: usage.cacheReadTokens,
    cache_write_tokens: usage.cacheWriteTokens,
    reasoning_tokens: usage.reasoningTokens,
    cache_read_share: usage.cacheReadShare,
    cost_usd: usage.costUsd,
    cache_savings_usd: usage.cacheSavingsUsd,
  };
}

export function budgetShown(left: BudgetLeft): Record<string, number | null> {
  return {
    period_seconds: left.periodSeconds,
    tokens_used: left.tokensUsed,
    tokens_left: left.tokensLeft,
    cost_used_usd: left.costUsedUsd,
    cost_left_usd: left.costLeftUsd,
  };
}

function timeOf(query: Record<string, unknown>, parameter: 'from' | 'to'): number | undefined {
  const value = query[parameter];
  if (value === undefined) return undefined;
  const parts =
    typeof value === 'string'
      ? /^(\d{4})-(\d{2})-(\d{2})(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/.exec(value)
      : null;
  // A calendar date that exists (2026-02-30 is refused, not rolled over into March).
  const [year, month, day] = parts ? [Number(parts[1]), Number(parts[2]), Number(parts[3])] : [0, 0, 0];
  const real =
    parts !== null && new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day && month >= 1 && month <= 12;
  const ms = real ? Date.parse(value as string) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new GatewayError('invalid_query_parameter', {
      parameter,
      problem:
        'an ISO 8601 date, or date and time with Z or an offset (URL-encode "+" as %2B), e.g. 2026-11-01 or 2026-11-01T00:00:00Z',
    });
  }
  return ms;
}

/** Only the administrator token manages keys (the route right alone is not enough, whatever grants it). */
function requireAdmin(request: FastifyRequest): void {
  if (request.principal?.kind !== 'admin')
    throw new GatewayError('route_not_allowed', {
      route: 'keys',
      problem: 'only the administrator token manages keys',
    });
}

function idOf(query: Record<string, unknown>): string {
  const id = query.id;
  if (typeof id !== 'string' || !/^[A-Za-z0-9]{1,64}$/.test(id))
    throw new GatewayError('invalid_query_parameter', {
      parameter: 'id',
      problem: 'the id of a key is required (letters and digits), given once',
    });
  return id;
}

function pageOf(query: Record<string, unknown>): {
  limit: number;
  after: Pick<KeyView, 'createdMs' | 'keyId'> | undefined;
  state: KeyState | undefined;
} {
  const limit = parsePageLimit(query.limit, { fallback: DEFAULT_PAGE, max: MAX_PAGE });
  const token = query.next_token;
  let after: Pick<KeyView, 'createdMs' | 'keyId'> | undefined;
  if (token !== undefined) {
    const match =
      typeof token === 'string' && token.length <= 200
        ? /^(\d{1,16}):([A-Za-z0-9]{1,64})$/.exec(Buffer.from(token, 'base64url').toString('utf8'))
        : null;
    if (!match) throw new GatewayError('invalid_pagination_token', { parameter: 'next_token' });
    after = { createdMs: Number(match[1]), keyId: match[2] as string };
  }
  const state = query.state;
  if (state !== undefined && !STATES.includes(state as KeyState))
    throw new GatewayError('invalid_query_parameter', { parameter: 'state', allowed: [...STATES] });
  return { limit, after, state: state as KeyState | undefined };
}

/** The body's fields as rights (`expires_at` as milliseconds); on a change, `null` stays `null` (remove). */
export function rightsOf(body: Record<string, unknown>, creating: boolean): Partial<Record<keyof KeyRights, unknown>> {
  const out: Partial<Record<keyof KeyRights, unknown>> = {};
  if (body.name !== undefined) out.name = body.name;
  if (body.routes !== undefined) out.routes = body.routes;
  else if (creating) out.routes = ['chat'];
  if (body.models !== undefined) out.models = body.models;
  for (const field of ['limits', 'budget'] as const)
    if (body[field] !== undefined) out[field] = body[field] === null && creating ? undefined : body[field];
  // None and an empty list say the same (no tool): one stored form, so a change from one to the other is no change.
  if (body.mcp_tools !== undefined) {
    const tools = body.mcp_tools as string[] | null;
    out.mcpTools = tools === null || tools.length === 0 ? (creating ? undefined : null) : tools;
  }
  if (body.expires_at !== undefined) {
    const ms = body.expires_at === null ? null : Date.parse(body.expires_at as string);
    // The schema's date-time admits a leap second (…T23:59:60Z), which Date cannot read: refused, never stored as NaN.
    if (ms !== null && !Number.isFinite(ms))
      throw new GatewayError('validation_failed', {
        errors: [
          {
            field: 'expires_at',
            problem: 'not a time this gateway can read (e.g. a leap second): use 2027-01-01T00:00:00Z',
          },
        ],
      });
    out.expiresMs = ms === null ? (creating ? undefined : null) : ms;
  }
  return out;
}

/** A key as the API shows it: snake_case times in ISO 8601, never a hash. */
export function shown(view: KeyView): Record<string, unknown> {
  return {
    id: view.keyId,
    name: view.name,
    environment: view.environment,
    state: view.state,
    routes: view.routes,
    models: view.models,
    limits: view.limits ?? null,
    budget: view.budget ?? null,
    mcp_tools: view.mcpTools ?? [],
    created_at: new Date(view.createdMs).toISOString(),
    expires_at: view.expiresMs === undefined ? null : new Date(view.expiresMs).toISOString(),
    revoked_at: view.revokedMs === undefined ? null : new Date(view.revokedMs).toISOString(),
    rotated_from: view.rotatedFrom ?? null,
  };
}
