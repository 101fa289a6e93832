export type StreamUsageMode = 'on' | 'off' | 'auto';

/** The wire formats the gateway speaks upstream: one provider class each (src/providers/provider-registry.ts). */
export type WireFormat = 'openai' | 'anthropic' | 'gemini';

/**
 * What the gateway knows of one upstream `kind`: which wire format it speaks, its default base URL, and for the
 * OpenAI-compatible presets their addressing (Azure: the deployment in the path, `api-version` in the query, the
 * key in an `api-key` header). `kind: <name>` in the config file selects one; `base_url` overrides the default
 * (and is required where there is none: Azure, whose URL names your resource). This table is the one place a
 * kind is known: the config schema, the config loader and the provider registry all read it.
 */
export interface ProviderKind {
  wire: WireFormat;
  baseUrl: string | undefined;
  /** How the key is sent on the OpenAI wire: `Authorization: Bearer <key>`, or Azure's `api-key: <key>`. */
  auth: 'bearer' | 'api-key';
  /** Azure: `{base}/deployments/{upstream model}/chat/completions?api-version=...`. */
  deploymentInPath: boolean;
  /**
   * Whether the server accepts `stream_options: {include_usage: true}`: then the gateway asks for usage on every
   * stream (for limits and cost) and keeps the usage chunk from callers that did not ask for it. `auto` for
   * servers that may or may not: ask, and if one refuses the field, ask it no more (remembered per upstream).
   */
  streamUsage: StreamUsageMode;
  /** Serves OpenAI's Responses API itself (`POST {base}/responses`): requests only it can honour are forwarded. */
  nativeResponses?: boolean;
  /** Its chat API takes `web_search_options` (OpenAI's own); other servers are not known to, so a search is left out. */
  chatWebSearch?: boolean;
  /** Has OpenAI's Files API (`POST {base}/files`, purpose `user_data`): a gateway file a request names is uploaded there. */
  filesApi?: boolean;
  /**
   * Which family of the built-in price catalog prices its models when the config gives no price or window
   * (catalog/model-prices.json, core/models/price-book.ts); `by-vendor`: the model name's vendor prefix names the family
   * (OpenRouter's `anthropic/claude-sonnet-4.5`, see VENDOR_PRICE_FAMILIES). Absent: no catalog price, because what
   * the server charges is not known (a local server, or an OpenAI-compatible one of unknown make).
   */
  priceFamily?: string;
  /**
   * Has the provider's own batch API (OpenAI's Files + Batches, Anthropic's Message Batches, Gemini's Batch API), at
   * half the price: a batch whose lines all go to such an upstream is forwarded there by default (`batch: native`).
   */
  nativeBatches?: boolean;
}

/** An aggregator's vendor prefixes (`google/gemini-2.5-pro`) and the catalog family that prices them. */
export const VENDOR_PRICE_FAMILIES: Readonly<Record<string, string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  google: 'gemini',
  mistralai: 'mistral',
  deepseek: 'deepseek',
};
export const BY_VENDOR = 'by-vendor';
/** Every family a kind can name: what a price catalog file may hold. */
export const PRICE_FAMILIES = ['openai', 'anthropic', 'gemini', 'mistral', 'deepseek', 'groq', 'together'] as const;

const openAi = (
  baseUrl: string | undefined,
  streamUsage: StreamUsageMode = 'on',
  priceFamily?: string,
): ProviderKind => ({
  wire: 'openai',
  baseUrl,
  auth: 'bearer',
  deploymentInPath: false,
  streamUsage,
  ...(priceFamily ? { priceFamily } : {}),
});
// Native wire formats: the key goes in their own header, and usage always arrives (stream_usage does not apply).
const native = (wire: WireFormat, baseUrl: string, priceFamily: string): ProviderKind => ({
  wire,
  baseUrl,
  auth: 'bearer',
  deploymentInPath: false,
  streamUsage: 'off',
  priceFamily,
});

export const PROVIDER_KINDS = {
  'openai-compatible': openAi(undefined, 'auto'), // unknown server: asked, until it refuses the field
  openai: {
    ...openAi('https://api.openai.com/v1', 'on', 'openai'),
    nativeResponses: true,
    chatWebSearch: true,
    nativeBatches: true,
    filesApi: true,
  },
  // Azure's global deployments cost what OpenAI's models do; a deployment is priced when it is named like its model.
  azure: {
    wire: 'openai',
    baseUrl: undefined,
    auth: 'api-key',
    deploymentInPath: true,
    streamUsage: 'on',
    nativeResponses: true,
    priceFamily: 'openai',
  },
  groq: openAi('https://api.groq.com/openai/v1', 'on', 'groq'),
  mistral: openAi('https://api.mistral.ai/v1', 'off', 'mistral'), // sends usage in its last chunk unasked
  deepseek: openAi('https://api.deepseek.com/v1', 'on', 'deepseek'),
  together: openAi('https://api.together.xyz/v1', 'on', 'together'),
  openrouter: openAi('https://openrouter.ai/api/v1', 'on', BY_VENDOR), // bills a vendor's models at the vendor's prices
  ollama: openAi('http://127.0.0.1:11434/v1'),
  vllm: openAi('http://127.0.0.1:8000/v1'),
  'llama-cpp': openAi('http://127.0.0.1:8080/v1', 'auto'),
  lmstudio: openAi('http://127.0.0.1:1234/v1', 'auto'),
  anthropic: { ...native('anthropic', 'https://api.anthropic.com/v1', 'anthropic'), nativeBatches: true },
  gemini: { ...native('gemini', 'https://generativelanguage.googleapis.com/v1beta', 'gemini'), nativeBatches: true },
} as const satisfies Record<string, ProviderKind>;

export type ProviderKindName = keyof typeof PROVIDER_KINDS;
export const PROVIDER_KIND_NAMES = Object.keys(PROVIDER_KINDS) as [ProviderKindName, ...ProviderKindName[]];

/** The descriptor of `kind`, or undefined for a name that is none. */
export function providerKind(kind: string): ProviderKind | undefined {
  return Object.hasOwn(PROVIDER_KINDS, kind) ? PROVIDER_KINDS[kind as ProviderKindName] : undefined;
}

/** The Azure OpenAI data-plane API version used when the config names none (GA, supports tools and streaming). */
export const DEFAULT_AZURE_API_VERSION = '2024-10-21';
