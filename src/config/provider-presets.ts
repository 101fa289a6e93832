export type StreamUsageMode = 'on' | 'off' | 'auto';

/**
 * Providers that speak OpenAI's Chat Completions API, as presets of the one OpenAI-compatible provider: a
 * default base URL, and for Azure OpenAI its own addressing (the deployment in the path, `api-version` in the
 * query, the key in an `api-key` header). `kind: <preset>` in the config file selects one; `base_url` then
 * overrides the default (and is required where there is none: Azure, whose URL names your resource).
 */
export interface OpenAiPreset {
  baseUrl: string | undefined;
  /** How the key is sent: `Authorization: Bearer <key>`, or Azure's `api-key: <key>`. */
  auth: 'bearer' | 'api-key';
  /** Azure: `{base}/deployments/{upstream model}/chat/completions?api-version=...`. */
  deploymentInPath: boolean;
  /**
   * Whether the server accepts `stream_options: {include_usage: true}`: then the gateway asks for usage on every
   * stream (for limits and cost) and keeps the usage chunk from callers that did not ask for it. `auto` for
   * servers that may or may not: ask, and if one refuses the field, ask it no more (remembered per upstream).
   */
  streamUsage: StreamUsageMode;
}

const bearer = (baseUrl: string | undefined, streamUsage: StreamUsageMode = 'on'): OpenAiPreset => ({ baseUrl, auth: 'bearer', deploymentInPath: false, streamUsage });

export const OPENAI_PRESETS = {
  'openai-compatible': bearer(undefined, 'auto'), // unknown server: asked, until it refuses the field
  openai: bearer('https://api.openai.com/v1'),
  azure: { baseUrl: undefined, auth: 'api-key', deploymentInPath: true, streamUsage: 'on' },
  groq: bearer('https://api.groq.com/openai/v1'),
  mistral: bearer('https://api.mistral.ai/v1', 'off'), // sends usage in its last chunk unasked
  deepseek: bearer('https://api.deepseek.com/v1'),
  together: bearer('https://api.together.xyz/v1'),
  openrouter: bearer('https://openrouter.ai/api/v1'),
  ollama: bearer('http://127.0.0.1:11434/v1'),
  vllm: bearer('http://127.0.0.1:8000/v1'),
  'llama-cpp': bearer('http://127.0.0.1:8080/v1', 'auto'),
  lmstudio: bearer('http://127.0.0.1:1234/v1', 'auto'),
} as const satisfies Record<string, OpenAiPreset>;

export type OpenAiPresetName = keyof typeof OPENAI_PRESETS;
export const OPENAI_PRESET_NAMES = Object.keys(OPENAI_PRESETS) as OpenAiPresetName[];

/** The Azure OpenAI data-plane API version used when the config names none (GA, supports tools and streaming). */
export const DEFAULT_AZURE_API_VERSION = '2024-10-21';
