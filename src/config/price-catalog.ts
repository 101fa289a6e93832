// The built-in price catalog (catalog/model-prices.json): list prices and context windows of mainstream models,
// used where the config gives a model none. Read and checked once at start-up, never at import time.
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { PRICE_FAMILIES } from './provider-presets.js';
import { FILE_BOUNDS, readBoundedFileSync, readFailure } from './bounded-file.js';
import { parseFailureWhere } from './parse-failure.js';

/** The committed catalog: from src/config/ and from dist/config/ alike, two levels up is the package's root. */
export const DEFAULT_PRICE_CATALOG_FILE = fileURLToPath(new URL('../../catalog/model-prices.json', import.meta.url));

const price = z.number().min(0).max(1_000_000);

const entrySchema = z
  .object({
    input_per_million: price,
    output_per_million: price,
    cache_read_per_million: price.optional(),
    cache_write_per_million: price.optional(),
    cache_write_1h_per_million: price.optional(),
    /** Tokens of prompt plus completion the model takes; absent when not published plainly. */
    context_window: z.number().int().min(1).max(100_000_000).optional(),
    /** Other names the provider gives the same model (`claude-sonnet-4-0`). */
    aliases: z.array(z.string().min(1).max(256)).max(32).optional(),
    /** The provider's own name for it (`Claude Sonnet 4.5`): the models APIs' display name. */
    display_name: z.string().min(1).max(200).optional(),
    /** The day the provider released it (YYYY-MM-DD, its announcement); absent where a name moves (`-latest`). */
    released: z.iso.date().optional(),
  })
  .strict();

const familySchema = z
  .object({
    /** Where the figures were read (the provider's pricing page). */
    source: z.url({ protocol: /^https?$/ }),
    notes: z.string().max(4000).optional(),
    models: z.record(z.string().min(1).max(256), entrySchema),
  })
  .strict();

const catalogSchema = z
  .object({
    /** The day the figures are known to be valid for (YYYY-MM-DD). */
    as_of: z.iso.date(),
    notes: z.string().max(4000).optional(),
    families: z.partialRecord(z.enum(PRICE_FAMILIES), familySchema),
  })
  .strict();

/** One model's catalog prices (USD per million tokens, the config's meaning: core/models/pricing.ts) and window. */
export interface CatalogPrice {
  /** `family/model` as the file names it (for operators: where a price came from). */
  entry: string;
  inputPerMillion: number;
  outputPerMillion: number;
  cacheReadPerMillion: number | undefined;
  cacheWritePerMillion: number | undefined;
  cacheWrite1hPerMillion: number | undefined;
  contextWindow: number | undefined;
  /** The provider's name for the model (`Claude Sonnet 4.5`), when the catalog has it. */
  displayName: string | undefined;
  /** The day it was released (YYYY-MM-DD), when the catalog has it. */
  released: string | undefined;
}

export interface PriceCatalog {
  /** YYYY-MM-DD: the figures are the providers' list prices on that day. */
  asOf: string;
  file: string;
  /** Family -> lower-cased model name or alias -> its prices. */
  families: ReadonlyMap<string, ReadonlyMap<string, CatalogPrice>>;
  /** Where each family's figures come from. */
  sources: ReadonlyMap<string, string>;
  /** Model entries (aliases not counted). */
  models: number;
}

/** A catalog file that cannot be used: every problem, each naming the file and the field. */
export class PriceCatalogError extends Error {
  constructor(readonly problems: string[]) {
    super(`price catalog unusable:\n  - ${problems.join('\n  - ')}`);
    this.name = 'PriceCatalogError';
  }
}

/** Reads and checks a catalog file; throws PriceCatalogError naming every problem. */
export function loadPriceCatalog(file: string): PriceCatalog {
  const problems: string[] = [];
  const catalog = readPriceCatalog(file, problems);
  if (!catalog) throw new PriceCatalogError(problems);
  return catalog;
}

/** Reads and checks a catalog file, adding its problems (each naming the file and field) to `problems`. */
export function readPriceCatalog(file: string, problems: string[]): PriceCatalog | undefined {
  let text: string;
  try {
    text = readBoundedFileSync(file, FILE_BOUNDS.priceCatalog).toString('utf8');
  } catch (error) {
    problems.push(`price_catalog: cannot read ${file} (${readFailure(error)})`);
    return undefined;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    problems.push(`${file}: not valid JSON (${parseFailureWhere(error)})`);
    return undefined;
  }
  const parsed = catalogSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const path = issue.path
        .map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`))
        .join('')
        .slice(1);
      const known =
        issue.code === 'unrecognized_keys' && path === 'families'
          ? ` (the families are ${PRICE_FAMILIES.join(', ')})`
          : '';
      problems.push(`${file}: ${path || '(root)'}: ${issue.message}${known}`);
    }
    return undefined;
  }
  const families = new Map<string, Map<string, CatalogPrice>>();
  const sources = new Map<string, string>();
  let models = 0;
  const before = problems.length;
  for (const [family, section] of Object.entries(parsed.data.families)) {
    if (!section) continue;
    const byName = new Map<string, CatalogPrice>();
    sources.set(family, section.source);
    for (const [model, entry] of Object.entries(section.models)) {
      models++;
      const prices: CatalogPrice = {
        entry: `${family}/${model}`,
        inputPerMillion: entry.input_per_million,
        outputPerMillion: entry.output_per_million,
        cacheReadPerMillion: entry.cache_read_per_million,
        cacheWritePerMillion: entry.cache_write_per_million,
        cacheWrite1hPerMillion: entry.cache_write_1h_per_million,
        contextWindow: entry.context_window,
        displayName: entry.display_name,
        released: entry.released,
      };
      // Names are matched without regard to case: two entries one name apart only in case are one model twice.
      for (const name of [model, ...(entry.aliases ?? [])]) {
        const key = name.toLowerCase();
        const taken = byName.get(key);
        if (taken)
          problems.push(
            `${file}: families.${family}.models.${model}: "${name}" is already ${taken.entry} (names match without regard to case)`,
          );
        else byName.set(key, prices);
      }
    }
    families.set(family, byName);
  }
  if (problems.length > before) return undefined;
  return { asOf: parsed.data.as_of, file, families, sources, models };
}
