import { providerKind, type WireFormat } from '../config/provider-presets.js';
import type { GatewayConfig, UpstreamConfig } from '../config/types.js';
import { sameUpstream } from '../config/config-diff.js';
import type { Provider } from './provider-contract.js';
import { ECHO_DESCRIPTION, ECHO_MODEL_ID, EchoProvider } from './echo/echo-provider.js';
import { OpenAiCompatibleProvider } from './openai-compatible/openai-compatible-provider.js';
import { AnthropicProvider } from './anthropic/anthropic-provider.js';
import { GeminiProvider } from './gemini/gemini-provider.js';

/** A model served by the gateway itself rather than an upstream (the dev-only echo). */
export interface BuiltinModel {
  id: string;
  description: string;
  provider: Provider;
}

export interface ProviderSet {
  /** Configured upstreams by name, in config order. */
  upstreams: Map<string, Provider>;
  /** Built-in models by id (only the dev echo model today, and only in dev). */
  builtins: Map<string, BuiltinModel>;
  close(): Promise<void>;
}

/** The provider class of each wire format (which kind speaks which format: config/provider-presets.ts). */
const PROVIDER_FACTORIES: Record<WireFormat, (upstream: UpstreamConfig, options: { userAgent: string }) => Provider> = {
  openai: (upstream, options) => new OpenAiCompatibleProvider(upstream, options),
  anthropic: (upstream, options) => new AnthropicProvider(upstream, options),
  gemini: (upstream, options) => new GeminiProvider(upstream, options),
};

/** Builds one provider per configured upstream, by its kind's wire format. */
export function createProviders(config: GatewayConfig): ProviderSet {
  const upstreams = new Map<string, Provider>();
  for (const upstream of config.upstreams) upstreams.set(upstream.name, createProvider(upstream, config.version));
  return providerSet(upstreams, builtinsOf(config));
}

function builtinsOf(config: GatewayConfig): Map<string, BuiltinModel> {
  const builtins = new Map<string, BuiltinModel>();
  if (config.devEchoModel) {
    builtins.set(ECHO_MODEL_ID, { id: ECHO_MODEL_ID, description: ECHO_DESCRIPTION, provider: new EchoProvider() });
  }
  return builtins;
}

function createProvider(upstream: UpstreamConfig, version: string): Provider {
  const wire = providerKind(upstream.kind)?.wire ?? 'openai';
  return PROVIDER_FACTORIES[wire](upstream, { userAgent: `llm-gateway/${version}` });
}

/**
 * The providers of a reloaded config: an upstream defined exactly as before keeps its provider (its connection
 * pool, what it learned of the upstream); a new or changed one gets a new provider. `retired`: the providers no
 * longer used, to be closed by the caller (undici's close lets the requests they carry finish first).
 */
export function updateProviders(
  previous: ProviderSet,
  before: GatewayConfig,
  after: GatewayConfig,
): { providers: ProviderSet; retired: Provider[] } {
  const old = new Map(before.upstreams.map((u) => [u.name, u]));
  const upstreams = new Map<string, Provider>();
  for (const upstream of after.upstreams) {
    const was = old.get(upstream.name);
    const kept = was && sameUpstream(was, upstream) ? previous.upstreams.get(upstream.name) : undefined;
    upstreams.set(upstream.name, kept ?? createProvider(upstream, after.version));
  }
  const kept = new Set(upstreams.values());
  const retired = [...previous.upstreams.values()].filter((p) => !kept.has(p));
  const builtins = before.devEchoModel === after.devEchoModel ? previous.builtins : builtinsOf(after);
  return { providers: providerSet(upstreams, builtins), retired };
}

function providerSet(upstreams: Map<string, Provider>, builtins: Map<string, BuiltinModel>): ProviderSet {
  return {
    upstreams,
    builtins,
    async close() {
      await Promise.all([...upstreams.values()].map((p) => p.close()));
    },
  };
}
