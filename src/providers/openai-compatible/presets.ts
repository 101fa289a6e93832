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
}

const bearer = (baseUrl: string | undefined): OpenAiPreset => ({ baseUrl, auth: 'bearer', deploymentInPath: false });

export const OPENAI_PRESETS = {
  'openai-compatible': bearer(undefined),
  openai: bearer('https://api.openai.com/v1'),
  azure: { baseUrl: undefined, auth: 'api-key', deploymentInPath: true },
  groq: bearer('https://api.groq.com/openai/v1'),
  mistral: bearer('https://api.mistral.ai/v1'),
  deepseek: bearer('https://api.deepseek.com/v1'),
  together: bearer('https://api.together.xyz/v1'),
  openrouter: bearer('https://openrouter.ai/api/v1'),
  ollama: bearer('http://127.0.0.1:11434/v1'),
  vllm: bearer('http://127.0.0.1:8000/v1'),
  'llama-cpp': bearer('http://127.0.0.1:8080/v1'),
  lmstudio: bearer('http://127.0.0.1:1234/v1'),
} as const satisfies Record<string, OpenAiPreset>;

export type OpenAiPresetName = keyof typeof OPENAI_PRESETS;
export const OPENAI_PRESET_NAMES = Object.keys(OPENAI_PRESETS) as OpenAiPresetName[];

/** The Azure OpenAI data-plane API version used when the config names none (GA, supports tools and streaming). */
export const DEFAULT_AZURE_API_VERSION = '2024-10-21';
