/**
 * The built-in price catalog (issue 31): the committed file parses and is plausible; a bad file fails start-up with
 * every problem named; names match across dated suffixes, Gemini's `models/` prefix and OpenRouter's vendor
 * prefixes; which kinds have catalog prices; and the config overrides the catalog (prices wholesale, the window).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DEFAULT_PRICE_CATALOG_FILE,
  PriceCatalogError,
  loadPriceCatalog,
  type PriceCatalog,
} from '../../../src/config/price-catalog.js';
import { PROVIDER_KINDS, PRICE_FAMILIES } from '../../../src/config/provider-presets.js';
import { ConfigError, loadConfig } from '../../../src/config/load.js';
import { PriceBook, catalogPrice } from '../../../src/core/models/price-book.js';

const dir = mkdtempSync(join(tmpdir(), 'gw-price-catalog-'));
const file = (name: string, content: unknown) => {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
};
const problemsOf = (path: string): string[] => {
  try {
    loadPriceCatalog(path);
  } catch (error) {
    assert.ok(error instanceof PriceCatalogError, String(error));
    return error.problems;
  }
  assert.fail(`${path} was accepted`);
};

describe('the committed price catalog', () => {
  const catalog = loadPriceCatalog(DEFAULT_PRICE_CATALOG_FILE);
  const raw = JSON.parse(readFileSync(DEFAULT_PRICE_CATALOG_FILE, 'utf8')) as {
    families: Record<string, { source: string; models: Record<string, Record<string, number>> }>;
  };

  test('parses; dated no later than today; every family a kind prices has a source and entries', () => {
    assert.match(catalog.asOf, /^\d{4}-\d{2}-\d{2}$/);
    assert.ok(Date.parse(catalog.asOf) <= Date.now(), 'as_of is not in the future');
    const priced = new Set(
      Object.values(PROVIDER_KINDS).flatMap((k) =>
        'priceFamily' in k && k.priceFamily !== 'by-vendor' ? [k.priceFamily] : [],
      ),
    );
    for (const family of PRICE_FAMILIES) {
      assert.ok(priced.has(family), `${family} is named by some kind`);
      assert.match(catalog.sources.get(family) ?? '', /^https:\/\//, `${family} has a source`);
      assert.ok((catalog.families.get(family)?.size ?? 0) >= 2, `${family} has entries`);
    }
    assert.ok(catalog.models >= 60, `${catalog.models} models`);
  });

  test('every entry: prices at or above 0 and plausible, cache reads cheaper than input, a plausible window', () => {
    for (const [family, section] of Object.entries(raw.families)) {
      for (const [model, e] of Object.entries(section.models)) {
        const name = `${family}/${model}`;
        const { input_per_million: input = -1, output_per_million: output = -1 } = e;
        assert.ok(input >= 0 && input <= 200 && output >= 0 && output <= 1000, `${name}: ${input} / ${output}`);
        if (e.cache_read_per_million !== undefined)
          assert.ok(e.cache_read_per_million < input, `${name}: a cache read costs less than input`);
        if (e.cache_write_per_million !== undefined)
          assert.ok(e.cache_write_per_million >= input, `${name}: a cache write costs at least input`);
        if (e.cache_write_1h_per_million !== undefined)
          assert.ok(
            e.cache_write_1h_per_million >= (e.cache_write_per_million ?? input),
            `${name}: a 1-hour write costs at least a 5-minute one`,
          );
        if (e.context_window !== undefined)
          assert.ok(e.context_window >= 2_048 && e.context_window <= 10_000_000, `${name}: window ${e.context_window}`);
      }
    }
    // Anthropic's cache multiples: reads 0.1×, 5-minute writes 1.25×, 1-hour writes 2× of input (Claude 3 Haiku's
    // published figures are rounded: $0.03 and $0.30 on $0.25).
    for (const [model, e] of Object.entries(raw.families.anthropic?.models ?? {}).filter(
      ([m]) => m !== 'claude-3-haiku',
    )) {
      const input = e.input_per_million as number;
      assert.deepEqual(
        [e.cache_read_per_million, e.cache_write_per_million, e.cache_write_1h_per_million],
        [round(input * 0.1), round(input * 1.25), round(input * 2)],
        model,
      );
    }
  });
});

const round = (n: number) => Math.round(n * 1e6) / 1e6;

describe('a catalog file that cannot be used fails start-up, naming the file and every problem', () => {
  test('not JSON; the wrong shape (bad date, unknown family, negative price, misspelt field, bad source); a name twice', () => {
    assert.match(problemsOf(file('not-json.json', '{"as_of": ')).join('\n'), /not-json\.json: not valid JSON/);
    assert.match(problemsOf(join(dir, 'absent.json')).join('\n'), /cannot read .*absent\.json \(ENOENT\)/);
    const shape = problemsOf(
      file('shape.json', {
        as_of: '2025-13-01',
        families: {
          openai: { source: 'ftp://example.com', models: { m: { input_per_million: -1, output_per_milion: 2 } } },
        },
      }),
    ).join('\n');
    for (const expected of [
      /shape\.json: as_of: /,
      /shape\.json: families\.openai\.source: /,
      /families\.openai\.models\.m\.input_per_million: /,
      /families\.openai\.models\.m: .*output_per_milion/,
      /families\.openai\.models\.m\.output_per_million: /,
    ]) {
      assert.match(shape, expected);
    }
    assert.match(
      problemsOf(
        file('family.json', {
          as_of: '2025-11-01',
          families: { opneai: { source: 'https://example.com', models: {} } },
        }),
      ).join('\n'),
      /families: .*opneai.*\(the families are openai, anthropic/,
    );
    const twice = problemsOf(
      file('twice.json', {
        as_of: '2025-11-01',
        families: {
          openai: {
            source: 'https://example.com',
            models: {
              a: { input_per_million: 1, output_per_million: 2, aliases: ['B'] },
              b: { input_per_million: 1, output_per_million: 2 },
            },
          },
        },
      }),
    );
    assert.deepEqual(twice, [
      `${join(dir, 'twice.json')}: families.openai.models.b: "b" is already openai/a (names match without regard to case)`,
    ]);
  });

  test('through the config: start-up (loadConfig) lists the catalog problem with the others; price_catalog: false uses none', () => {
    const bad = file('bad-catalog.json', { as_of: 'yesterday', families: {} });
    const config = file('gateway.yaml', `price_catalog: ${bad}\n`);
    assert.throws(
      () => loadConfig({ GATEWAY_CONFIG: config, GATEWAY_ENV: 'dev', DATA_DIR: dir }),
      (error: unknown) => error instanceof ConfigError && error.problems.some((p) => p.startsWith(`${bad}: as_of: `)),
    );
    const off = file('off.yaml', 'price_catalog: false\n');
    assert.equal(loadConfig({ GATEWAY_CONFIG: off, GATEWAY_ENV: 'dev', DATA_DIR: dir }).priceCatalog, undefined);
    // A relative path is read from the config file's folder.
    file('mine.json', {
      as_of: '2025-06-30',
      families: {
        groq: { source: 'https://example.com', models: { m: { input_per_million: 1, output_per_million: 2 } } },
      },
    });
    const mine = loadConfig({
      GATEWAY_CONFIG: file('mine.yaml', 'price_catalog: mine.json\n'),
      GATEWAY_ENV: 'dev',
      DATA_DIR: dir,
    }).priceCatalog;
    assert.deepEqual([mine?.asOf, mine?.models], ['2025-06-30', 1]);
    assert.equal(loadConfig({ GATEWAY_ENV: 'dev', DATA_DIR: dir }).priceCatalog?.file, DEFAULT_PRICE_CATALOG_FILE);
  });
});

describe('matching a model name to a catalog entry', () => {
  const catalog = loadPriceCatalog(DEFAULT_PRICE_CATALOG_FILE);
  const entry = (kind: string, model: string) => catalogPrice(catalog, kind, model)?.entry;

  test('exact, any case; a dated or version suffix stripped; an exact dated entry wins; Gemini models/; dots as dashes', () => {
    assert.equal(entry('anthropic', 'claude-sonnet-4-5'), 'anthropic/claude-sonnet-4-5');
    assert.equal(entry('anthropic', 'Claude-Sonnet-4-5'), 'anthropic/claude-sonnet-4-5');
    assert.equal(entry('anthropic', 'claude-sonnet-4-5-20250929'), 'anthropic/claude-sonnet-4-5');
    assert.equal(entry('anthropic', 'claude-opus-4-20250514'), 'anthropic/claude-opus-4');
    assert.equal(entry('anthropic', 'claude-sonnet-4-0'), 'anthropic/claude-sonnet-4');
    assert.equal(entry('anthropic', 'claude-3-5-haiku-latest'), 'anthropic/claude-3-5-haiku');
    assert.equal(entry('openai', 'gpt-4o-2024-08-06'), 'openai/gpt-4o');
    assert.equal(entry('openai', 'gpt-4o-2024-05-13'), 'openai/gpt-4o-2024-05-13');
    assert.equal(catalogPrice(catalog, 'openai', 'gpt-4o-2024-05-13')?.inputPerMillion, 5);
    assert.equal(entry('openai', 'gpt-4.1-mini-2025-04-14'), 'openai/gpt-4.1-mini');
    assert.equal(entry('mistral', 'mistral-large-2411'), 'mistral/mistral-large');
    assert.equal(entry('mistral', 'mistral-small-latest'), 'mistral/mistral-small');
    assert.equal(entry('gemini', 'models/gemini-2.5-flash'), 'gemini/gemini-2.5-flash');
    assert.equal(entry('gemini', 'gemini-2.0-flash-001'), 'gemini/gemini-2.0-flash');
    assert.equal(entry('groq', 'openai/gpt-oss-120b'), 'groq/openai/gpt-oss-120b');
    assert.equal(
      entry('together', 'meta-llama/Llama-3.3-70B-Instruct-Turbo'),
      'together/meta-llama/Llama-3.3-70B-Instruct-Turbo',
    );
    assert.equal(entry('openai', 'gpt-4o-mini-fine-tuned'), undefined);
    assert.equal(entry('openai', 'x'.repeat(300)), undefined);
  });

  test('the kind names the family: Azure is OpenAI; OpenRouter by vendor prefix; Groq its own; local and unknown servers none', () => {
    assert.equal(entry('azure', 'gpt-4o-mini'), 'openai/gpt-4o-mini');
    assert.equal(entry('azure', 'my-deployment'), undefined);
    assert.equal(entry('openrouter', 'anthropic/claude-sonnet-4.5'), 'anthropic/claude-sonnet-4-5');
    assert.equal(entry('openrouter', 'anthropic/claude-3.5-haiku'), 'anthropic/claude-3-5-haiku');
    assert.equal(entry('openrouter', 'google/gemini-2.5-pro'), 'gemini/gemini-2.5-pro');
    assert.equal(entry('openrouter', 'openai/gpt-4o'), 'openai/gpt-4o');
    assert.equal(entry('openrouter', 'mistralai/mistral-large'), 'mistral/mistral-large');
    assert.equal(entry('openrouter', 'deepseek/deepseek-chat'), 'deepseek/deepseek-chat');
    assert.equal(
      entry('openrouter', 'meta-llama/llama-3.3-70b-instruct'),
      undefined,
      'a vendor the catalog does not price',
    );
    assert.equal(entry('openrouter', 'constructor/x'), undefined, 'no prototype key is a vendor');
    assert.equal(entry('openrouter', 'gpt-4o'), undefined, 'no vendor prefix');
    // Groq's own `openai/gpt-oss-120b` is Groq's price, not OpenAI's family.
    assert.equal(catalogPrice(catalog, 'groq', 'openai/gpt-oss-20b')?.inputPerMillion, 0.075);
    assert.equal(entry('groq', 'gpt-4o'), undefined);
    for (const kind of ['ollama', 'vllm', 'llama-cpp', 'lmstudio', 'openai-compatible', 'no-such-kind'])
      assert.equal(entry(kind, 'gpt-4o'), undefined, kind);
    assert.equal(catalogPrice(undefined, 'openai', 'gpt-4o'), undefined);
  });
});

describe('the price book: the config overrides the catalog', () => {
  const catalog = loadPriceCatalog(DEFAULT_PRICE_CATALOG_FILE);
  const upstream = (name: string, kind: string) => ({ name, kind }) as unknown as PriceBookConfig['upstreams'][number];
  type PriceBookConfig = ConstructorParameters<typeof PriceBook>[0];
  const model = (id: string, up: string, upstreamModel: string, extra: Record<string, unknown> = {}) =>
    ({
      id,
      upstream: up,
      upstreamModel,
      aliases: [],
      pricing: undefined,
      contextWindow: undefined,
      ...extra,
    }) as unknown as PriceBookConfig['models'][number];
  const config = (priceCatalog: PriceCatalog | undefined): PriceBookConfig => ({
    upstreams: [upstream('claude', 'anthropic'), upstream('oai', 'openai'), upstream('local', 'ollama')],
    defaultUpstream: 'oai',
    priceCatalog,
    models: [
      model('sonnet', 'claude', 'claude-sonnet-4-5-20250929', { aliases: ['s'] }),
      model('priced', 'claude', 'claude-sonnet-4-5', {
        pricing: {
          inputPerMillion: 1,
          outputPerMillion: 2,
          cacheReadPerMillion: undefined,
          cacheWritePerMillion: undefined,
          cacheWrite1hPerMillion: undefined,
        },
        contextWindow: 1000,
      }),
      model('half', 'claude', 'claude-sonnet-4-5', {
        pricing: {
          inputPerMillion: 1,
          outputPerMillion: 2,
          cacheReadPerMillion: undefined,
          cacheWritePerMillion: undefined,
          cacheWrite1hPerMillion: undefined,
        },
      }),
      model('llama', 'local', 'llama3.1:8b'),
    ],
  });

  test('catalog when the config gives none; config prices replace the catalog entry wholesale; windows each on their own', () => {
    const book = new PriceBook(config(catalog), new Set(['echo']));
    const sonnet = book.of('sonnet');
    assert.deepEqual(
      [
        sonnet.pricing?.inputPerMillion,
        sonnet.pricing?.cacheReadPerMillion,
        sonnet.pricingSource,
        sonnet.contextWindow,
        sonnet.contextWindowSource,
        sonnet.catalogEntry,
      ],
      [3, 0.3, 'catalog', 200_000, 'catalog', 'anthropic/claude-sonnet-4-5'],
    );
    assert.equal(book.of('s'), sonnet, 'an alias is its model');
    const priced = book.of('priced');
    assert.deepEqual(
      [
        priced.pricing?.inputPerMillion,
        priced.pricing?.cacheReadPerMillion,
        priced.pricingSource,
        priced.contextWindow,
        priced.contextWindowSource,
        priced.catalogEntry,
      ],
      [1, undefined, 'config', 1000, 'config', undefined],
    );
    // Config prices without a cache price: no cache price from the catalog (cache reads at the config's input price).
    const half = book.of('half');
    assert.deepEqual(
      [half.pricing?.cacheReadPerMillion, half.pricingSource, half.contextWindow, half.contextWindowSource],
      [undefined, 'config', 200_000, 'catalog'],
    );
    assert.deepEqual([book.of('llama').pricing, book.of('llama').pricingSource], [undefined, undefined]);
    // Undeclared: the default upstream's kind and the name as given; a built-in model is never priced.
    assert.equal(book.of('gpt-4o-mini-2024-07-18').catalogEntry, 'openai/gpt-4o-mini');
    assert.equal(book.of('echo').pricing, undefined);
    assert.equal(book.of('gpt-4o-mini-2024-07-18'), book.of('gpt-4o-mini-2024-07-18'), 'worked out once per id');
    assert.equal(new PriceBook(config(undefined)).of('sonnet').pricing, undefined, 'no catalog: no catalog price');
    assert.equal(
      new PriceBook({ ...config(catalog), defaultUpstream: undefined }).of('gpt-4o').pricing,
      undefined,
      'no default upstream: undeclared ids are not served',
    );
  });

  test('the undeclared ids kept are bounded (callers choose them)', () => {
    const book = new PriceBook(config(catalog));
    const first = book.of('caller-chosen-0');
    for (let i = 1; i <= 1_000; i++) book.of(`caller-chosen-${i}`);
    assert.notEqual(book.of('caller-chosen-0'), first, 'forgotten once 1,000 others were asked for');
    assert.equal(book.of('gpt-4o').pricing?.inputPerMillion, 2.5);
  });
});
