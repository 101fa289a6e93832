import type { GatewayConfig } from '../../config/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { BuiltinModel } from '../../providers/provider-registry.js';
import { parsePageLimit } from '../page-limit.js';
import type { FactSource, ModelFacts, PriceBook } from './price-book.js';
import type { UpstreamProbe } from './upstream-probe.js';

export interface CatalogModel {
  id: string;
  object: 'model';
  provider: string;
  upstream_model: string;
  context_window: number | null;
  /** Where `context_window` came from: the model's config, or the price catalog (absent when there is none). */
  context_window_source?: FactSource;
  /**
   * When it was released (ISO 8601): the config's `created_at`, else the upstream's own list's (an undeclared model),
   * else the price catalog's day (a dated snapshot's own: core/models/price-book.ts `released`); null when none says.
   */
  created_at: string | null;
  /** Its human-readable name: the config's `display_name`, else the price catalog's; absent when neither has one. */
  display_name?: string;
  owned_by: string | null;
  source: 'config' | 'upstream' | 'builtin';
  description?: string;
  aliases?: string[];
  /** Declared: chat or embedding, and an embedding model's vector length. */
  type?: 'chat' | 'embedding';
  dimensions?: number;
  /** USD per million tokens. */
  pricing?: {
    input_per_million_tokens: number;
    output_per_million_tokens: number;
    cache_read_per_million_tokens?: number;
    cache_write_per_million_tokens?: number;
    cache_write_1h_per_million_tokens?: number;
    currency: 'USD';
    /** The model's config, or the price catalog (then `as_of`: the day its figures are the providers' list prices). */
    source: FactSource;
    as_of?: string;
    /** The catalog entry that matched (`anthropic/claude-sonnet-4-5`). */
    catalog_entry?: string;
  };
}

export interface ModelPage {
  object: 'list';
  data: CatalogModel[];
  next_token?: string;
  /** Upstreams whose model list could not be read just now (their declared models are still listed). */
  unavailable?: Array<{ upstream: string; code: string }>;
}

/** What one caller may see of a model: nothing, the model, or narrower entries (see `page`). */
export type ModelView = (model: CatalogModel) => CatalogModel[];

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

/**
 * The models the gateway serves: those declared in config, then (for the default upstream, which accepts any
 * model name) the upstream's own list, then the built-in models (the dev echo). Sorted by id so a cursor is stable.
 */
export class ModelCatalog {
  constructor(
    private config: GatewayConfig,
    private defaultProbe: UpstreamProbe | undefined,
    private builtins: ReadonlyMap<string, BuiltinModel>,
    private prices: PriceBook,
  ) {}

  /** A config reload: the next listing shows the new models, prices and default upstream. */
  update(
    config: GatewayConfig,
    defaultProbe: UpstreamProbe | undefined,
    builtins: ReadonlyMap<string, BuiltinModel>,
    prices: PriceBook,
  ): void {
    this.config = config;
    this.defaultProbe = defaultProbe;
    this.builtins = builtins;
    this.prices = prices;
  }

  /**
   * One page of the models, sorted by id. `view` (a caller's rights) maps each model to what that caller may see
   * of it: nothing, the model itself, or narrower entries. It runs before paging, so pages stay full and cursors
   * stay valid for that caller.
   */
  async page(limit: number, nextToken: string | undefined, view?: ModelView): Promise<ModelPage> {
    const after = nextToken === undefined ? undefined : decodeCursor(nextToken);
    const all = await this.all();
    const { unavailable } = all;
    const models = view ? all.models.flatMap(view).sort(compareIds) : all.models;
    const start = after === undefined ? 0 : models.findIndex((m) => m.id > after);
    const slice = start === -1 ? [] : models.slice(start, start + limit);
    const page: ModelPage = { object: 'list', data: slice };
    const last = slice[slice.length - 1];
    if (last && start + limit < models.length) page.next_token = encodeCursor(last.id);
    if (unavailable.length > 0) page.unavailable = unavailable;
    return page;
  }

  private async all(): Promise<{ models: CatalogModel[]; unavailable: Array<{ upstream: string; code: string }> }> {
    const byId = new Map<string, CatalogModel>();
    for (const m of this.config.models) {
      const facts = this.prices.of(m.id);
      const displayName = m.displayName ?? facts.displayName;
      byId.set(m.id, {
        id: m.id,
        object: 'model',
        provider: m.upstream,
        upstream_model: m.upstreamModel,
        ...this.facts(facts),
        created_at: m.createdAt ?? dayStart(facts.released),
        ...(displayName !== undefined ? { display_name: displayName } : {}),
        owned_by: null,
        source: 'config',
        ...(m.description ? { description: m.description } : {}),
        ...(m.aliases.length > 0 ? { aliases: m.aliases } : {}),
        ...(m.type ? { type: m.type } : {}),
        ...(m.dimensions !== undefined ? { dimensions: m.dimensions } : {}),
      });
    }
    const unavailable: Array<{ upstream: string; code: string }> = [];
    if (this.defaultProbe) {
      const probe = await this.defaultProbe.check();
      if (!probe.ok)
        unavailable.push({ upstream: this.defaultProbe.provider.name, code: probe.code ?? 'upstream_error' });
      for (const m of probe.models) {
        if (byId.has(m.id)) continue;
        const facts = this.prices.describe(m.id);
        byId.set(m.id, {
          id: m.id,
          object: 'model',
          provider: this.defaultProbe.provider.name,
          upstream_model: m.id,
          ...this.facts(facts),
          created_at: m.createdAt ?? dayStart(facts.released),
          ...(facts.displayName !== undefined ? { display_name: facts.displayName } : {}),
          owned_by: m.ownedBy ?? null,
          source: 'upstream',
        });
      }
    }
    for (const builtin of this.builtins.values()) {
      if (byId.has(builtin.id)) continue;
      byId.set(builtin.id, {
        id: builtin.id,
        object: 'model',
        provider: builtin.provider.name,
        upstream_model: builtin.id,
        context_window: null,
        created_at: null,
        owned_by: builtin.provider.name,
        source: 'builtin',
        description: builtin.description,
      });
    }
    const models = [...byId.values()].sort(compareIds);
    return { models, unavailable };
  }

  /** A model's context window and prices as the models route shows them, each with where it came from. */
  private facts(facts: ModelFacts): Pick<CatalogModel, 'context_window' | 'context_window_source' | 'pricing'> {
    const p = facts.pricing;
    const fromCatalog = facts.pricingSource === 'catalog';
    return {
      context_window: facts.contextWindow ?? null,
      ...(facts.contextWindowSource ? { context_window_source: facts.contextWindowSource } : {}),
      ...(p && facts.pricingSource
        ? {
            pricing: {
              input_per_million_tokens: p.inputPerMillion,
              output_per_million_tokens: p.outputPerMillion,
              ...(p.cacheReadPerMillion !== undefined ? { cache_read_per_million_tokens: p.cacheReadPerMillion } : {}),
              ...(p.cacheWritePerMillion !== undefined
                ? { cache_write_per_million_tokens: p.cacheWritePerMillion }
                : {}),
              ...(p.cacheWrite1hPerMillion !== undefined
                ? { cache_write_1h_per_million_tokens: p.cacheWrite1hPerMillion }
                : {}),
              currency: 'USD' as const,
              source: facts.pricingSource,
              ...(fromCatalog && this.prices.catalog ? { as_of: this.prices.catalog.asOf } : {}),
              ...(fromCatalog && facts.catalogEntry ? { catalog_entry: facts.catalogEntry } : {}),
            },
          }
        : {}),
    };
  }
}

/** A release day (YYYY-MM-DD) as the start of that day in UTC, or null when none is known. */
function dayStart(day: string | undefined): string | null {
  return day === undefined ? null : `${day}T00:00:00.000Z`;
}

function compareIds(a: CatalogModel, b: CatalogModel): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Opaque to callers; versioned so its format can change without breaking tokens in flight. */
function encodeCursor(afterId: string): string {
  return Buffer.from(JSON.stringify({ v: 1, after: afterId })).toString('base64url');
}

function decodeCursor(token: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { v?: unknown; after?: unknown };
    if (parsed.v === 1 && typeof parsed.after === 'string') return parsed.after;
  } catch {
    // fall through
  }
  throw new GatewayError('invalid_pagination_token', { parameter: 'next_token' });
}

/** Reads `limit` from the query: absent means the default; anything but a whole number in range is a 400. */
export function parseLimit(raw: unknown): number {
  return parsePageLimit(raw, { fallback: DEFAULT_PAGE_SIZE, max: MAX_PAGE_SIZE });
}
