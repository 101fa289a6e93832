import type { GatewayConfig } from '../config/types.js';
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

/** Builds one provider per configured upstream. The only place that knows which class serves which kind. */
export function createProviders(config: GatewayConfig): ProviderSet {
  const userAgent = `llm-gateway/${config.version}`;
  const upstreams = new Map<string, Provider>();
  for (const upstream of config.upstreams) {
    const provider =
      upstream.kind === 'anthropic'
        ? new AnthropicProvider(upstream, { userAgent })
        : upstream.kind === 'gemini'
          ? new GeminiProvider(upstream, { userAgent })
          : new OpenAiCompatibleProvider(upstream, { userAgent });
    upstreams.set(upstream.name, provider);
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
