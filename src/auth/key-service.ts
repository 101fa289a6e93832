import { GRANTABLE_ROUTES, type GatewayEnvironment } from '../config/names.js';
import { canonicalJson } from '../core/pipeline/idempotency-key.js';
import { MAX_TOOL_PATTERNS, toolPatternProblem } from '../core/mcp/tool-rights.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { ApiKeyRecord, KeyStore, UsageStore, UsageSummaryRow, UsageTotals } from '../store/store-contract.js';
import { newApiKey } from './api-key.js';

/** What a key may do: the rights an operator gives it (the CLI's flags and the admin API's body say the same). */
export interface KeyRights {
  name: string;
  routes: string[];
  models: string[];
  limits?: ApiKeyRecord['limits'];
  budget?: ApiKeyRecord['budget'];
  /** MCP tool patterns `<server>/<tool glob>` (with the `mcp` route); absent or empty: no tool. */
  mcpTools?: string[];
  expiresMs?: number;
}

export type KeyState = 'active' | 'expired' | 'revoked';

/** A key as shown to operators: never its hash, never its secret. */
export type KeyView = Omit<ApiKeyRecord, 'hash'> & { state: KeyState };

/** What a key did over a period, from the usage records (requests, tokens, spend). */
export type KeyUsage = UsageTotals;

/**
 * What is left of a key's budget: its budget minus what the usage records say it used in the last
 * `period_seconds` (the limiter enforces the same rolling window; records reach the store within a second or two).
 */
export interface BudgetLeft {
  periodSeconds: number;
  tokensUsed: number;
  costUsedUsd: number;
  tokensLeft: number | null;
  costLeftUsd: number | null;
}

/**
 * The largest limits and budgets a key may be given. The limiter keeps each window in milliseconds and its state as
 * whole numbers: a budget period of years, or counts near 2^53, would overflow it (the budget then silently stops
 * being enforced). A year covers every real billing period; the counts are far above any real traffic.
 */
export const KEY_LIMIT_MAXIMA = {
  requestsPerMinute: 10_000_000,
  tokensPerMinute: 10_000_000_000,
  concurrent: 100_000,
  budgetTokens: 1_000_000_000_000,
  budgetUsd: 1_000_000_000,
  periodSeconds: 366 * 86_400,
} as const;

const NO_USAGE: KeyUsage = {
  requests: 0,
  errors: 0,
  promptTokens: 0,
  completionTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  cacheReadShare: null,
  costUsd: 0,
  cacheSavingsUsd: 0,
};

export function stateOf(record: Pick<ApiKeyRecord, 'revokedMs' | 'expiresMs'>, nowMs: number): KeyState {
  if (record.revokedMs !== undefined && record.revokedMs <= nowMs) return 'revoked';
  if (record.expiresMs !== undefined && record.expiresMs <= nowMs) return 'expired';
  return 'active';
}

export function viewOf(record: ApiKeyRecord, nowMs: number): KeyView {
  const { hash: _hash, ...shown } = record;
  return { ...shown, state: stateOf(record, nowMs) };
}

/**
 * Scoped keys as a service: create (the secret returned once, never stored: only its SHA-256), list, get,
 * change rights, rotate (the new key takes the old one's rights; the old one keeps working for a grace period),
 * revoke. The CLI and the admin API both call it, so a rule lives in one place. Refusals are GatewayErrors
 * naming the field (`validation_failed`), or `key_not_found` / `key_not_active`.
 */
export class KeyService {
  constructor(
    private readonly keys: KeyStore,
    private readonly environment: GatewayEnvironment,
    /** Where usage records are read from (none kept: usage is refused), and how to write the buffered ones first. */
    private readonly usage?: { store: UsageStore; flush: () => Promise<void> },
    /** Called after a key changed (this instance's key cache forgets it: a revocation bites here at once). */
    private readonly onChanged: (keyId: string) => void = () => undefined,
    /**
     * The routes a key can be given: the app's (the names table's and its mounted surfaces' own), or, without an app
     * (the `gateway keys` command), the names table's.
     */
    readonly grantable: readonly string[] = GRANTABLE_ROUTES,
  ) {}

  /** The environment whose keys this service manages (dev, staging, prod: never another's). */
  get managedEnvironment(): GatewayEnvironment {
    return this.environment;
  }

  /** Whether usage and spend can be reported (the gateway keeps usage records). */
  get reportsUsage(): boolean {
    return this.usage !== undefined;
  }

  /** Each key's usage in [fromMs, toMs), by key id; a key with no record has zeros. */
  async usageOf(keyIds: readonly string[], fromMs: number, toMs: number): Promise<Map<string, KeyUsage>> {
    const rows = await this.callerRows(keyIds, fromMs, toMs);
    return new Map(keyIds.map((id) => [id, rows.get(`key:${id}`) ?? NO_USAGE]));
  }

  /** What is left of each budgeted key's budget now (keys without a budget are left out). */
  async budgetsLeft(views: readonly KeyView[], nowMs = Date.now()): Promise<Map<string, BudgetLeft>> {
    const out = new Map<string, BudgetLeft>();
    const byPeriod = new Map<number, KeyView[]>();
    for (const view of views)
      if (view.budget)
        byPeriod.set(view.budget.period_seconds, [...(byPeriod.get(view.budget.period_seconds) ?? []), view]);
    for (const [periodSeconds, group] of byPeriod) {
      const rows = await this.callerRows(
        group.map((v) => v.keyId),
        nowMs - periodSeconds * 1000,
        nowMs + 1,
      );
      for (const view of group) {
        const used = rows.get(`key:${view.keyId}`) ?? NO_USAGE;
        const tokensUsed = used.promptTokens + used.completionTokens;
        const budget = view.budget as NonNullable<KeyView['budget']>;
        out.set(view.keyId, {
          periodSeconds,
          tokensUsed,
          costUsedUsd: used.costUsd,
          tokensLeft: budget.tokens === undefined ? null : Math.max(0, budget.tokens - tokensUsed),
          costLeftUsd: budget.cost_usd === undefined ? null : Math.max(0, roundMicros(budget.cost_usd - used.costUsd)),
        });
      }
    }
    return out;
  }

  private async callerRows(keyIds: readonly string[], fromMs: number, toMs: number): Promise<Map<string, KeyUsage>> {
    if (!this.usage)
      throw new GatewayError('capability_not_supported', {
        feature: 'key usage',
        problem: 'this gateway keeps no usage records (usage.enabled: false)',
      });
    await this.usage.flush();
    const rows: UsageSummaryRow[] = await this.usage.store.summarizeCallers(
      keyIds.map((id) => `key:${id}`),
      fromMs,
      toMs,
    );
    const usageOf = (r: UsageSummaryRow): KeyUsage => ({
      requests: r.requests,
      errors: r.errors,
      promptTokens: r.promptTokens,
      completionTokens: r.completionTokens,
      cacheReadTokens: r.cacheReadTokens,
      cacheWriteTokens: r.cacheWriteTokens,
      reasoningTokens: r.reasoningTokens,
      cacheReadShare: r.cacheReadShare,
      costUsd: roundMicros(r.costUsd),
      cacheSavingsUsd: roundMicros(r.cacheSavingsUsd) + 0,
    });
    return new Map(rows.map((r) => [r.group, usageOf(r)]));
  }

  async create(rights: KeyRights, nowMs = Date.now()): Promise<{ key: string; view: KeyView }> {
    checkRights(rights, this.grantable, nowMs);
    const { key, keyId, hash } = newApiKey(this.environment);
    const record: ApiKeyRecord = {
      keyId,
      environment: this.environment,
      hash,
      createdMs: nowMs,
      ...withoutUndefined(rights),
    };
    await this.keys.create(record);
    return { key, view: viewOf(record, nowMs) };
  }

  async list(nowMs = Date.now()): Promise<KeyView[]> {
    const all = await this.keys.list();
    return all.filter((r) => r.environment === this.environment).map((r) => viewOf(r, nowMs));
  }

  async get(keyId: string, nowMs = Date.now()): Promise<KeyView> {
    return viewOf(await this.record(keyId), nowMs);
  }

  /**
   * Changes rights, limits, budget or expiry; what the patch leaves out stays (`limits` and `budget` are replaced
   * whole). `null` removes limits, budget or expiry. An expired key may be renewed (a new `expires_at`); a revoked
   * key, or one replaced by a rotation, cannot be changed. `changed` names the fields whose value changed (none:
   * nothing was written).
   */
  async update(
    keyId: string,
    patch: Partial<{ [K in keyof KeyRights]: KeyRights[K] | null }>,
    nowMs = Date.now(),
  ): Promise<{ view: KeyView; changed: string[] }> {
    const current = await this.record(keyId);
    if (stateOf(current, nowMs) === 'revoked')
      throw new GatewayError('key_not_active', { key_id: keyId, state: 'revoked' });
    await this.refuseIfRotated(current);
    const next: ApiKeyRecord = { ...current };
    const changed: string[] = [];
    for (const [field, value] of Object.entries(patch) as Array<[keyof KeyRights, unknown]>) {
      if (value === undefined) continue;
      const after = value === null ? undefined : value;
      // Canonical JSON: the same limits sent with their fields in another order are no change.
      if (canonicalJson(after) === canonicalJson((current as unknown as Record<string, unknown>)[field])) continue;
      changed.push(field);
      // undefined, not delete: the stores merge the patch, and JSON drops an undefined field.
      (next as unknown as Record<string, unknown>)[field] = after;
    }
    // Only what this change sends is held to today's rules: a key stored before a bound existed stays changeable.
    checkRights(next, this.grantable, nowMs, new Set(changed));
    if (changed.length > 0) {
      await this.keys.update(keyId, next);
      this.onChanged(keyId);
    }
    return { view: viewOf(next, nowMs), changed };
  }

  /** A new key with the same rights; the old one works until `graceMs` from now (or its own expiry, if sooner). */
  async rotate(
    keyId: string,
    graceMs: number,
    nowMs = Date.now(),
  ): Promise<{ key: string; view: KeyView; previous: KeyView }> {
    const old = await this.record(keyId);
    const state = stateOf(old, nowMs);
    if (state !== 'active') throw new GatewayError('key_not_active', { key_id: keyId, state });
    // Rotated once already (in its grace period): a second rotation would fork the key into two successors.
    await this.refuseIfRotated(old);
    const { key, keyId: newId, hash } = newApiKey(this.environment);
    const { keyId: _id, hash: _hash, createdMs: _created, rotatedFrom: _from, ...rights } = old;
    const record: ApiKeyRecord = {
      ...rights,
      keyId: newId,
      hash,
      createdMs: nowMs,
      rotatedFrom: old.keyId,
      environment: this.environment,
    };
    await this.keys.create(record);
    const ends = Math.min(old.expiresMs ?? Number.POSITIVE_INFINITY, nowMs + graceMs);
    await this.keys.update(old.keyId, { expiresMs: ends });
    this.onChanged(old.keyId);
    return { key, view: viewOf(record, nowMs), previous: viewOf({ ...old, expiresMs: ends }, nowMs) };
  }

  /** Revokes; `changed` is false when it was revoked already (revoking twice changes nothing). */
  async revoke(keyId: string, nowMs = Date.now()): Promise<{ view: KeyView; changed: boolean }> {
    const current = await this.record(keyId);
    if (current.revokedMs !== undefined) return { view: viewOf(current, nowMs), changed: false };
    await this.keys.update(keyId, { revokedMs: nowMs });
    this.onChanged(keyId);
    return { view: viewOf({ ...current, revokedMs: nowMs }, nowMs), changed: true };
  }

  /** A key replaced by a rotation is on its way out: neither changed nor rotated again (its successor is). */
  private async refuseIfRotated(record: ApiKeyRecord): Promise<void> {
    const successor = (await this.keys.list()).find((r) => r.rotatedFrom === record.keyId);
    if (successor)
      throw new GatewayError('key_not_active', {
        key_id: record.keyId,
        state: 'rotated',
        successor: successor.keyId,
        problem: 'this key was replaced by a rotation: change or rotate its successor',
      });
  }

  private async record(keyId: string): Promise<ApiKeyRecord> {
    const record = await this.keys.get(keyId);
    if (!record || record.environment !== this.environment)
      throw new GatewayError('key_not_found', { key_id: keyId.slice(0, 64) });
    return record;
  }
}

/**
 * The rules a JSON Schema states badly. `grantable`: the routes a key can be given here. `only`: check just these
 * fields (a change), else every one (a new key).
 */
function checkRights(rights: KeyRights, grantable: readonly string[], nowMs: number, only?: ReadonlySet<string>): void {
  const checks = (field: keyof KeyRights) => only === undefined || only.has(field);
  const errors: Array<{ field: string; problem: string; allowed?: unknown[] }> = [];
  if (rights.name.trim() === '') errors.push({ field: 'name', problem: 'must say who or what the key is for' });
  if (rights.routes.length === 0)
    errors.push({ field: 'routes', problem: 'must list routes a key can be given', allowed: [...grantable] });
  rights.routes.forEach((route, i) => {
    if (!grantable.includes(route))
      errors.push({
        field: `routes[${i}]`,
        problem: `"${route.slice(0, 40)}" is not a route a key can be given`,
        allowed: [...grantable],
      });
  });
  if (rights.models.length === 0)
    errors.push({ field: 'models', problem: 'must list model ids, or "*" for every model' });
  if (checks('mcpTools') && rights.mcpTools !== undefined) errors.push(...toolPatternErrors(rights.mcpTools));
  if (checks('expiresMs') && rights.expiresMs !== undefined && !Number.isFinite(rights.expiresMs))
    errors.push({
      field: 'expires_at',
      problem: 'not a time this gateway can read (e.g. a leap second): use 2027-01-01T00:00:00Z',
    });
  else if (checks('expiresMs') && rights.expiresMs !== undefined && rights.expiresMs <= nowMs)
    errors.push({ field: 'expires_at', problem: 'must be in the future' });
  // The same bounds as the API's schema, for every caller of the service (the CLI's flags too).
  const budget = checks('budget') ? rights.budget : undefined;
  if (budget) {
    if (budget.tokens === undefined && budget.cost_usd === undefined)
      errors.push({ field: 'budget', problem: 'must set tokens, cost_usd or both' });
    if (!(budget.period_seconds >= 60 && budget.period_seconds <= KEY_LIMIT_MAXIMA.periodSeconds))
      errors.push({
        field: 'budget.period_seconds',
        problem: `from 60 to ${KEY_LIMIT_MAXIMA.periodSeconds} (366 days)`,
      });
    if (budget.tokens !== undefined && !(budget.tokens >= 1 && budget.tokens <= KEY_LIMIT_MAXIMA.budgetTokens))
      errors.push({ field: 'budget.tokens', problem: `from 1 to ${KEY_LIMIT_MAXIMA.budgetTokens}` });
    if (budget.cost_usd !== undefined && !(budget.cost_usd > 0 && budget.cost_usd <= KEY_LIMIT_MAXIMA.budgetUsd))
      errors.push({ field: 'budget.cost_usd', problem: `above 0, at most ${KEY_LIMIT_MAXIMA.budgetUsd}` });
  }
  const limits = checks('limits') ? rights.limits : undefined;
  if (limits) {
    const bounds = {
      requests_per_minute: KEY_LIMIT_MAXIMA.requestsPerMinute,
      tokens_per_minute: KEY_LIMIT_MAXIMA.tokensPerMinute,
      concurrent: KEY_LIMIT_MAXIMA.concurrent,
      mcp_calls_per_minute: KEY_LIMIT_MAXIMA.requestsPerMinute,
      mcp_concurrent: KEY_LIMIT_MAXIMA.concurrent,
    } as const;
    if (Object.values(limits).every((v) => v === undefined))
      errors.push({
        field: 'limits',
        problem:
          'must set at least one of requests_per_minute, tokens_per_minute, concurrent, mcp_calls_per_minute, mcp_concurrent',
      });
    for (const [field, max] of Object.entries(bounds) as Array<[keyof typeof bounds, number]>) {
      const value = limits[field];
      if (value !== undefined && !(Number.isInteger(value) && value >= 1 && value <= max))
        errors.push({ field: `limits.${field}`, problem: `a whole number from 1 to ${max}` });
    }
  }
  if (errors.length > 0) throw new GatewayError('validation_failed', { errors });
}

/** Each bad MCP tool pattern, named as the API names it (`mcp_tools[i]`), and too many of them. */
function toolPatternErrors(patterns: readonly string[]): Array<{ field: string; problem: string }> {
  const errors: Array<{ field: string; problem: string }> = [];
  if (patterns.length > MAX_TOOL_PATTERNS)
    errors.push({ field: 'mcp_tools', problem: `at most ${MAX_TOOL_PATTERNS} patterns` });
  patterns.forEach((pattern, i) => {
    const problem = toolPatternProblem(pattern);
    if (problem) errors.push({ field: `mcp_tools[${i}]`, problem: `"${pattern.slice(0, 60)}" ${problem}` });
  });
  return errors;
}

function roundMicros(usd: number): number {
  return Math.round(usd * 1e6) / 1e6;
}

function withoutUndefined(rights: KeyRights): KeyRights {
  const out: KeyRights = { name: rights.name, routes: rights.routes, models: rights.models };
  if (rights.limits !== undefined) out.limits = rights.limits;
  if (rights.budget !== undefined) out.budget = rights.budget;
  if (rights.mcpTools !== undefined) out.mcpTools = rights.mcpTools;
  if (rights.expiresMs !== undefined) out.expiresMs = rights.expiresMs;
  return out;
}
