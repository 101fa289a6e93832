import type { GatewayConfig, LimitsConfig, ModelConfig, UpstreamConfig } from './types.js';

/** What a reload changed, by name (never a value: an upstream's key shows as `api_key`, nothing more). */
export interface ConfigChanges {
  models: { added: string[]; removed: string[]; changed: string[] };
  /** `changed`: each upstream with the fields that differ (`base_url`, `api_key`, `timeouts`...). */
  upstreams: { added: string[]; removed: string[]; changed: Array<{ name: string; fields: string[] }> };
  /** Any limit or budget (caller, per model, per upstream, the store-failure policy, the pause cap). */
  limits: boolean;
  /** The own prices of a model in both configs, or the price catalog. */
  prices: boolean;
  /** The other live sections that differ: `default_upstream`, `retry`, `cache`, `webhooks`, `auth`, `dashboard`... */
  sections: string[];
}

/** Compares two validated configurations; pure, linear in their size. */
export function diffConfigs(before: GatewayConfig, after: GatewayConfig): ConfigChanges {
  return {
    models: diffByKey(before.models, after.models, (m) => m.id, modelKey),
    upstreams: diffUpstreams(before.upstreams, after.upstreams),
    limits: limitsKey(before.limits) !== limitsKey(after.limits),
    prices: catalogKey(before) !== catalogKey(after) || pricesChanged(before.models, after.models),
    sections: SECTIONS.filter(([, read]) => json(read(before)) !== json(read(after))).map(([name]) => name),
  };
}

/** Whether a reload changed nothing the gateway uses (the file changed only in comments or formatting, say). */
export function noChanges(changes: ConfigChanges): boolean {
  const { models, upstreams } = changes;
  return (
    models.added.length + models.removed.length + models.changed.length === 0 &&
    upstreams.added.length + upstreams.removed.length + upstreams.changed.length === 0 &&
    !changes.limits &&
    !changes.prices &&
    changes.sections.length === 0
  );
}

/** The live sections beyond models, upstreams, limits and prices, each read the same way from both configs. */
const SECTIONS: ReadonlyArray<readonly [string, (config: GatewayConfig) => unknown]> = [
  ['default_upstream', (c) => c.defaultUpstream ?? null],
  ['retry', (c) => c.retry],
  ['cache', (c) => c.cache.undeclaredModels ?? null],
  ['webhooks', (c) => ({ ...c.webhooks, subscriptions: c.webhooks.subscriptions })],
  ['auth.oauth', (c) => c.oauth ?? null],
  ['auth.basic_users', (c) => c.basicUsers],
  ['dashboard', (c) => c.dashboard],
  ['dev_echo_model', (c) => c.devEchoModel],
  // Servers by name and the digest of what each is connected with (never a secret's value).
  [
    'mcp',
    (c) => ({
      ...c.mcp,
      servers: c.mcp.servers.map((s) => ({ ...s, connection: undefined, secrets: undefined })),
    }),
  ],
];

function diffByKey<T>(
  before: readonly T[],
  after: readonly T[],
  idOf: (item: T) => string,
  keyOf: (item: T) => string,
): { added: string[]; removed: string[]; changed: string[] } {
  const old = new Map(before.map((item) => [idOf(item), keyOf(item)]));
  const next = new Map(after.map((item) => [idOf(item), keyOf(item)]));
  return {
    added: [...next.keys()].filter((id) => !old.has(id)),
    removed: [...old.keys()].filter((id) => !next.has(id)),
    changed: [...next].filter(([id, key]) => old.has(id) && old.get(id) !== key).map(([id]) => id),
  };
}

function diffUpstreams(
  before: readonly UpstreamConfig[],
  after: readonly UpstreamConfig[],
): ConfigChanges['upstreams'] {
  const old = new Map(before.map((u) => [u.name, u]));
  const names = new Set(after.map((u) => u.name));
  const changed: Array<{ name: string; fields: string[] }> = [];
  for (const upstream of after) {
    const previous = old.get(upstream.name);
    if (!previous) continue;
    const fields = (Object.keys(upstream) as Array<keyof UpstreamConfig>)
      .filter((field) => json(upstream[field]) !== json(previous[field]))
      .map(snakeCase);
    if (fields.length > 0) changed.push({ name: upstream.name, fields });
  }
  return {
    added: after.filter((u) => !old.has(u.name)).map((u) => u.name),
    removed: before.filter((u) => !names.has(u.name)).map((u) => u.name),
    changed,
  };
}

/**
 * Whether an upstream is still the same endpoint: same name, base URL and kind. Its circuit and pauses describe
 * that endpoint's health, so they carry over only while it is the same (docs/config.md, "Live reload").
 */
export function sameEndpoint(a: UpstreamConfig, b: UpstreamConfig): boolean {
  return a.name === b.name && a.baseUrl === b.baseUrl && a.kind === b.kind;
}

/** Whether two upstream definitions are identical (then its provider and connection pool are kept as they are). */
export function sameUpstream(a: UpstreamConfig, b: UpstreamConfig): boolean {
  return json(a) === json(b);
}

function modelKey(model: ModelConfig): string {
  return json(model);
}

/** Whether a model in both configs has other prices (an added or removed model is a model change, not a price one). */
function pricesChanged(before: readonly ModelConfig[], after: readonly ModelConfig[]): boolean {
  const old = new Map(before.map((m) => [m.id, json(m.pricing)]));
  return after.some((m) => old.has(m.id) && old.get(m.id) !== json(m.pricing));
}

function catalogKey(config: GatewayConfig): string {
  const catalog = config.priceCatalog;
  if (!catalog) return 'none';
  const families = [...catalog.families].map(([family, prices]) => [family, [...prices]]);
  return json([catalog.asOf, catalog.file, families]);
}

function limitsKey(limits: LimitsConfig): string {
  return json({ ...limits, models: [...limits.models], upstreams: [...limits.upstreams] });
}

function snakeCase(field: string): string {
  return field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** JSON with `undefined` kept apart from absence (configs are built by one function, so key order is stable). */
function json(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v === undefined ? '<undefined>' : v)) ?? 'undefined';
}
