import { providerKind, type WireFormat } from '../config/provider-presets.js';
import type { GatewayConfig, UpstreamConfig } from '../config/types.js';
import type { Provider } from './contract.js';
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
  const userAgent = `llm-gateway/${config.version}`;
  const upstreams = new Map<string, Provider>();
  for (const upstream of config.upstreams) {
    const wire = providerKind(upstream.kind)?.wire ?? 'openai';
    upstreams.set(upstream.name, PROVIDER_FACTORIES[wire](upstream, { userAgent }));
  }
  const builtins = new Map<string, BuiltinModel>();
  if (config.devEchoModel) {
    builtins.set(ECHO_MODEL_ID, { id: ECHO_MODEL_ID, description: ECHO_DESCRIPTION, provider: new EchoProvider() });
  }
  return {
    upstreams,
    builtins,
    async close() {
      await Promise.all([...upstreams.values()].map((p) => p.close()));
    },
  };
}
