import type { CatalogPrice, PriceCatalog } from '../../config/price-catalog.js';
import { BY_VENDOR, VENDOR_PRICE_FAMILIES, providerKind } from '../../config/provider-presets.js';
import type { GatewayConfig, ModelConfig } from '../../config/types.js';
import type { Usage } from '../../providers/provider-contract.js';
import { cacheSavingsUsd, costUsd, type PricedUsage, type Pricing } from './pricing.js';

/** Where a model's price or window came from: its config entry, or the price catalog. */
export type FactSource = 'config' | 'catalog';

/** What the gateway knows of a model's prices and context window, and where each came from. */
export interface ModelFacts {
  /** The model's id (a declared model's own id, for an alias too). */
  id: string;
  /** The name its (first) upstream knows it by: what the catalog was matched with, and what picks the tokenizer. */
  upstreamModel: string;
  pricing: Pricing | undefined;
  pricingSource: FactSource | undefined;
  contextWindow: number | undefined;
  contextWindowSource: FactSource | undefined;
  /** The catalog entry that matched (`anthropic/claude-sonnet-4-5`), if one did. */
  catalogEntry: string | undefined;
  /** The provider's name for the model (`Claude Sonnet 4.5`): the catalog's, when an entry matched and has one. */
  displayName: string | undefined;
  /**
   * The day the model was released (YYYY-MM-DD): a dated snapshot's own day (`gpt-4o-2024-08-06`) unless its catalog
   * entry is that very name, else the matched catalog entry's `released`; undefined when neither says.
   */
  released: string | undefined;
}

/** Undeclared model ids come from callers: their facts are kept for this many ids at most (then forgotten at once). */
const MAX_CACHED_IDS = 1_000;
/** No provider names a model longer; a longer name is not looked up. */
const MAX_NAME_LENGTH = 256;
/** A version a provider appends to a model's name: -20250929, -2024-08-06, -2411 or -0613, -001, -latest. */
const VERSION_SUFFIX = /-(?:\d{8}|\d{4}-\d{2}-\d{2}|\d{3,4}|latest)$/;

/**
 * The catalog's prices of `model` as served by an upstream of `kind`, or undefined. The kind names the catalog
 * family (config/provider-presets.ts `priceFamily`: Azure is OpenAI's, OpenRouter's `vendor/model` names the
 * vendor's; local and unknown servers have none). The name is matched without regard to case: as it is, then
 * without Gemini's `models/` prefix, then without a version suffix, each also with the dots of a version written as
 * dashes (OpenRouter's `claude-sonnet-4.5` is Anthropic's `claude-sonnet-4-5`). An exact entry always wins, so a
 * dated snapshot priced apart (`gpt-4o-2024-05-13`) is listed by its own name.
 */
export function catalogPrice(catalog: PriceCatalog | undefined, kind: string, model: string): CatalogPrice | undefined {
  let family = providerKind(kind)?.priceFamily;
  if (!catalog || family === undefined || model.length > MAX_NAME_LENGTH) return undefined;
  let name = model.toLowerCase();
  if (family === BY_VENDOR) {
    const slash = name.indexOf('/');
    const vendor = name.slice(0, slash);
    if (slash <= 0 || !Object.hasOwn(VENDOR_PRICE_FAMILIES, vendor)) return undefined;
    family = VENDOR_PRICE_FAMILIES[vendor] as string;
    name = name.slice(slash + 1);
  }
  const models = catalog.families.get(family);
  if (!models) return undefined;
  if (name.startsWith('models/')) name = name.slice('models/'.length);
  const found = models.get(name);
  if (found) return found;
  const unversioned = name.replace(VERSION_SUFFIX, '');
  for (const candidate of [unversioned, dashed(name), dashed(unversioned)]) {
    const match = candidate === name ? undefined : models.get(candidate);
    if (match) return match;
  }
  return undefined;
}

/** `claude-3.5-haiku` -> `claude-3-5-haiku`: a version's dots as dashes. */
function dashed(name: string): string {
  return name.includes('.') ? name.replace(/(\d)\.(\d)/g, '$1-$2') : name;
}

/**
 * Each model's prices and context window: its config's, else the catalog's (config/price-catalog.ts). A config
 * `pricing` replaces the catalog's prices as a whole (a price it leaves out is not taken from the catalog), and
 * `context_window` the catalog's window. A declared model is matched by its first target (the upstream and name
 * the models route shows); an undeclared one by the default upstream's kind and the name as the caller gave it.
 * Declared models are worked out once here; an undeclared id on first use, then kept (bounded: callers choose ids).
 */
export class PriceBook {
  private readonly declared = new Map<string, ModelFacts>();
  private readonly undeclared = new Map<string, ModelFacts>();
  private readonly defaultKind: string | undefined;

  constructor(
    private readonly config: Pick<GatewayConfig, 'models' | 'upstreams' | 'defaultUpstream' | 'priceCatalog'>,
    /** Built-in models (the dev echo): not served by the default upstream, so never priced. */
    private readonly builtins: { has(id: string): boolean } = new Set<string>(),
  ) {
    for (const model of config.models) {
      const facts = this.declaredFacts(model);
      for (const id of [model.id, ...model.aliases]) this.declared.set(id, facts);
    }
    this.defaultKind = config.upstreams.find((u) => u.name === config.defaultUpstream)?.kind;
  }

  get catalog(): PriceCatalog | undefined {
    return this.config.priceCatalog;
  }

  /** The facts of a model id as a caller names it (declared id, alias, or a name for the default upstream). */
  of(modelId: string): ModelFacts {
    const declared = this.declared.get(modelId);
    if (declared) return declared;
    let facts = this.undeclared.get(modelId);
    if (!facts) {
      facts = this.undeclaredFacts(modelId);
      if (this.undeclared.size >= MAX_CACHED_IDS) this.undeclared.clear();
      this.undeclared.set(modelId, facts);
    }
    return facts;
  }

  /** A call's usage with its cost when the model (as the caller named it) has prices (config, else catalog). */
  priced(modelId: string, usage: Usage | undefined): PricedUsage | undefined {
    if (!usage) return undefined;
    const pricing = this.of(modelId).pricing;
    return pricing
      ? { ...usage, cost_usd: costUsd(usage, pricing), cache_savings_usd: cacheSavingsUsd(usage, pricing) }
      : usage;
  }

  /** The same as `of`, without keeping anything (for listings: the default upstream's whole model list). */
  describe(modelId: string): ModelFacts {
    return this.declared.get(modelId) ?? this.undeclaredFacts(modelId);
  }

  /** The kind of a configured upstream. */
  kindOf(upstream: string): string | undefined {
    return this.config.upstreams.find((u) => u.name === upstream)?.kind;
  }

  private declaredFacts(model: ModelConfig): ModelFacts {
    const kind = this.kindOf(model.upstream);
    // Looked up even when the config gives prices and window: the catalog also names and dates the model.
    const found = kind === undefined ? undefined : catalogPrice(this.config.priceCatalog, kind, model.upstreamModel);
    return facts(model.id, model.upstreamModel, model.pricing, model.contextWindow, found);
  }

  private undeclaredFacts(modelId: string): ModelFacts {
    const served = this.defaultKind !== undefined && !this.builtins.has(modelId);
    return facts(
      modelId,
      modelId,
      undefined,
      undefined,
      served ? catalogPrice(this.config.priceCatalog, this.defaultKind as string, modelId) : undefined,
    );
  }
}

function facts(
  id: string,
  upstreamModel: string,
  pricing: Pricing | undefined,
  contextWindow: number | undefined,
  found: CatalogPrice | undefined,
): ModelFacts {
  const price = pricing ?? found;
  const window = contextWindow ?? found?.contextWindow;
  return {
    id,
    upstreamModel,
    pricing: price,
    pricingSource: pricing ? 'config' : found ? 'catalog' : undefined,
    contextWindow: window,
    contextWindowSource: contextWindow !== undefined ? 'config' : window !== undefined ? 'catalog' : undefined,
    catalogEntry: (pricing === undefined || contextWindow === undefined) && found ? found.entry : undefined,
    displayName: found?.displayName,
    released: releasedOf(upstreamModel, found),
  };
}

/** A date a provider puts at the end of a snapshot's name: `-20250929` or `-2024-08-06`. */
const SNAPSHOT_DATE = /-(\d{4})-?(\d{2})-?(\d{2})$/;

/**
 * The day a model was released: its catalog entry's, when the entry is that very name (an entry of its own, like
 * `gpt-4o-2024-05-13`); else the day a dated snapshot's name says (`gpt-4o-2024-08-06` is not `gpt-4o`'s first
 * release); else the entry's (matched without the version suffix, or an alias). A day that is no calendar day is none.
 */
function releasedOf(upstreamModel: string, found: CatalogPrice | undefined): string | undefined {
  const entryName = found?.entry.slice(found.entry.indexOf('/') + 1).toLowerCase();
  const ownEntry = found !== undefined && entryName === upstreamModel.toLowerCase();
  if (ownEntry && found.released !== undefined) return found.released;
  const dated = SNAPSHOT_DATE.exec(upstreamModel);
  if (dated) {
    const day = `${dated[1]}-${dated[2]}-${dated[3]}`;
    const parsed = new Date(`${day}T00:00:00Z`);
    if (!Number.isNaN(parsed.getTime()) && parsed.toISOString().startsWith(day)) return day;
  }
  return found?.released;
}
