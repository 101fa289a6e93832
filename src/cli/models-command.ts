import { relative } from 'node:path';
import { providerKind } from '../config/provider-presets.js';
import type { GatewayConfig } from '../config/types.js';
import { PriceBook, type ModelFacts } from '../core/models/price-book.js';
import { ECHO_MODEL_ID } from '../providers/echo/echo-provider.js';
import { parseFlags } from './keys-command.js';
import type { CliOutput } from './webhooks-command.js';
import { printable } from './summary-output.js';

const PRICE_COLUMNS = ['input', 'output', 'cache_read', 'cache_write', 'cache_write_1h', 'price_source'];
/** Left-aligned; the others (figures) right-aligned. */
const TEXT_COLUMNS = new Set(['model', 'upstream', 'upstream_model', 'price_source', 'window_source', 'catalog_entry']);

/**
 * `gateway models [--prices] [--format table|json] [model ...]`: the declared models (and any model named on the
 * command line, as the gateway would route it), each with its context window and, with --prices, the prices that
 * apply (USD per million tokens) and where each came from: the config, the price catalog, or none. Works from the
 * config file alone: no server, no store.
 */
export function modelsCommand(config: GatewayConfig, args: string[], io: CliOutput, nowMs = Date.now()): number {
  // --prices is a switch: the word after it is a model, not its value.
  const withPrices = args.includes('--prices');
  const { flags, positionals } = parseFlags(args.filter((arg) => arg !== '--prices'));
  const format = flags.format ?? 'table';
  if (format !== 'table' && format !== 'json') {
    io.err('--format: table or json');
    return 2;
  }
  const book = new PriceBook(config, new Set(config.devEchoModel ? [ECHO_MODEL_ID] : []));
  const ids = [...new Set([...config.models.map((m) => m.id), ...positionals])];
  const rows = ids.map((id) => row(config, book.describe(id), withPrices));
  const catalog = config.priceCatalog;
  if (format === 'json') {
    const about = catalog
      ? { file: catalog.file, as_of: catalog.asOf, age_days: ageDays(catalog.asOf, nowMs), models: catalog.models }
      : null;
    io.out(JSON.stringify({ models: rows, price_catalog: about, undeclared: undeclaredNote(config) }));
    return 0;
  }
  const header = [
    'model',
    'upstream',
    'upstream_model',
    ...(withPrices ? PRICE_COLUMNS : []),
    'context_window',
    'window_source',
    ...(withPrices ? ['catalog_entry'] : []),
  ];
  const table = [header, ...rows.map((r) => header.map((column) => cell(r[column])))];
  const widths = header.map((_, i) => Math.max(...table.map((cells) => (cells[i] ?? '').length)));
  const left = header.map((column) => TEXT_COLUMNS.has(column));
  for (const cells of table)
    io.out(
      cells
        .map((text, i) => (left[i] ? text.padEnd(widths[i] ?? 0) : text.padStart(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    );
  if (rows.length === 0) io.out('(no model declared: name one on the command line to see how it would be priced)');
  io.out('');
  io.out(
    catalog
      ? `price catalog: ${shown(catalog.file)}, as of ${catalog.asOf} (${ageDays(catalog.asOf, nowMs)} days ago), ${catalog.models} models`
      : 'price catalog: none (price_catalog: false)',
  );
  io.out(undeclaredNote(config));
  if (withPrices)
    io.out(
      'USD per million tokens; a cache price shown as - is billed at the input price (cache_write_1h: at cache_write). docs/usage.md',
    );
  return 0;
}

type Row = Record<string, string | number | null>;

function row(config: GatewayConfig, facts: ModelFacts, withPrices: boolean): Row {
  const declared = config.models.find((m) => m.id === facts.id);
  const upstream =
    declared?.upstream ??
    (facts.id === ECHO_MODEL_ID && config.devEchoModel ? 'echo (built in)' : (config.defaultUpstream ?? null));
  const p = facts.pricing;
  const prices: Row = withPrices
    ? {
        input: p?.inputPerMillion ?? null,
        output: p?.outputPerMillion ?? null,
        cache_read: p?.cacheReadPerMillion ?? null,
        cache_write: p?.cacheWritePerMillion ?? null,
        cache_write_1h: p?.cacheWrite1hPerMillion ?? null,
        price_source: facts.pricingSource ?? 'none',
        catalog_entry: facts.catalogEntry ?? null,
      }
    : {};
  return {
    model: printable(facts.id),
    upstream,
    upstream_model: printable(facts.upstreamModel),
    ...prices,
    context_window: facts.contextWindow ?? null,
    window_source: facts.contextWindowSource ?? 'none',
  };
}

/** What happens to a model id the config does not declare. */
function undeclaredNote(config: GatewayConfig): string {
  const name = config.defaultUpstream;
  if (name === undefined) return 'models not declared: refused (no default_upstream)';
  const kind = config.upstreams.find((u) => u.name === name)?.kind ?? 'unknown';
  const family = providerKind(kind)?.priceFamily;
  const how =
    family === undefined
      ? 'no catalog price (what this kind of server charges is not known)'
      : family === 'by-vendor'
        ? "priced by the catalog family of the name's vendor prefix"
        : `priced by the catalog's ${family} family, by name`;
  return `models not declared: sent to ${name} (${kind}) under their own name; ${how}`;
}

function cell(value: string | number | null | undefined): string {
  return value === null || value === undefined ? '-' : String(value);
}

function ageDays(asOf: string, nowMs: number): number {
  return Math.max(0, Math.floor((nowMs - Date.parse(asOf)) / 86_400_000));
}

/** The catalog's path, relative to the working directory when it is below it. */
function shown(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel.startsWith('..') ? file : rel;
}
