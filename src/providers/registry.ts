import type { GatewayConfig } from '../config/types.js';
import type { Provider } from './contract.js';
import { EchoProvider } from './echo/echo-provider.js';
import { OpenAiCompatibleProvider } from './openai-compatible/openai-compatible-provider.js';

export interface ProviderSet {
  /** Configured upstreams by name, in config order. */
  upstreams: Map<string, Provider>;
  /** The dev-only echo provider, when enabled. */
  echo: Provider | undefined;
  close(): Promise<void>;
}

/** Builds one provider per configured upstream. The only place that knows which class serves which kind. */
export function createProviders(config: GatewayConfig): ProviderSet {
  const userAgent = `llm-gateway/${config.version}`;
  const upstreams = new Map<string, Provider>();
  for (const upstream of config.upstreams) {
    upstreams.set(upstream.name, new OpenAiCompatibleProvider(upstream, { userAgent }));
  }
  const echo = config.devEchoModel ? new EchoProvider() : undefined;
  return {
    upstreams,
    echo,
    async close() {
      await Promise.all([...upstreams.values()].map((p) => p.close()));
    },
  };
}
