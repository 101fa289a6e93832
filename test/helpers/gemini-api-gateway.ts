/**
 * The gateway of the Gemini API tests: three real node:http upstreams behind it, a Gemini one (`flash`, and
 * `gemini-2.0-flash` under its own name; the embedding model `gemini-embed`), a chat-completions one (`gpt-4o-mini`,
 * the embedding model `embed-small`) and an Anthropic one (`claude-fast`); more config lines as the test needs.
 */
import { startGeminiUpstream, type GeminiUpstream } from './upstreams/gemini.js';
import { startOpenAiUpstream, type OpenAiUpstream } from './upstreams/openai.js';
import { startAnthropicUpstream, type AnthropicUpstream } from './upstreams/anthropic.js';
import { startGateway, type TestGateway } from './gateway.js';

export const GEMINI_KEY = 'gemini-upstream-key-0123456789';
export const OPENAI_KEY = 'sk-openai-upstream-0123456789';

/** The three mocks and the gateway in front of them. */
export interface ThreeUpstreams {
  gemini: GeminiUpstream;
  openai: OpenAiUpstream;
  anthropic: AnthropicUpstream;
  gw: TestGateway;
}

export async function startThreeUpstreams(
  extraConfig: string[] = [],
  env: Record<string, string> = {},
  /** More upstream lines; `{openai}` stands for the chat mock's base URL. */
  extraUpstreams: string[] = [],
) {
  const gemini = await startGeminiUpstream({ requiredKey: GEMINI_KEY });
  const openai = await startOpenAiUpstream({ requiredKey: OPENAI_KEY });
  const anthropic = await startAnthropicUpstream();
  const gw = await startGateway({
    env: { GEMINI_KEY, OPENAI_KEY, ANTHROPIC_KEY: 'sk-ant-0123456789', ...env },
    configFile: {
      name: 'gemini-api.yaml',
      text: [
        'upstreams:',
        `  - { name: google, kind: gemini, base_url: "${gemini.baseUrl}", api_key_env: GEMINI_KEY }`,
        `  - { name: oai, base_url: "${openai.baseUrl}", api_key_env: OPENAI_KEY }`,
        `  - { name: claude, kind: anthropic, base_url: "${anthropic.baseUrl}", api_key_env: ANTHROPIC_KEY }`,
        ...extraUpstreams.map((line) => line.replaceAll('{openai}', openai.baseUrl)),
        'models:',
        '  - { id: flash, upstream: google, upstream_model: gemini-2.0-flash, pricing: { input_per_million: 1, output_per_million: 2 } }',
        '  - { id: gpt-4o-mini, upstream: oai, upstream_model: gpt-4o-mini, pricing: { input_per_million: 3, output_per_million: 5 } }',
        '  - { id: gemini-2.0-flash, upstream: google, upstream_model: gemini-2.0-flash }',
        '  - { id: claude-fast, upstream: claude, upstream_model: claude-haiku-4-5 }',
        '  - { id: gemini-embed, upstream: google, upstream_model: text-embedding-004, type: embedding }',
        '  - { id: embed-small, upstream: oai, upstream_model: text-embedding-3-small, type: embedding, dimensions: 4 }',
        ...extraConfig,
      ].join('\n'),
    },
  });
  return { gemini, openai, anthropic, gw } satisfies ThreeUpstreams;
}

export async function closeThreeUpstreams(fx: ThreeUpstreams | undefined): Promise<void> {
  await fx?.gw.close();
  await fx?.gemini.close();
  await fx?.openai.close();
  await fx?.anthropic.close();
}
