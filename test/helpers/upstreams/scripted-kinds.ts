/**
 * One scripted upstream (scripted.ts) behind the gateway as every upstream kind at once: a model per kind
 * (OpenAI-compatible chat, Anthropic, Gemini) and one on `kind: openai`, which speaks the Responses API natively.
 * The fixtures of the tools the gateway runs between model turns (file_search, MCP tools) start their gateway on it.
 */

/** The models, by the upstream kind that serves them. */
export const MODELS = { chat: 'chat-model', anthropic: 'claude-model', gemini: 'gemini-model' } as const;
/** The model on `kind: openai` (the Responses API forwarded natively). */
export const NATIVE_MODEL = 'native-model';

/** The config's `upstreams` and `models` sections for an upstream at `origin`, its key in the env var `keyEnv`. */
export function everyKindConfig(origin: string, keyEnv: string): string[] {
  return [
    'upstreams:',
    `  - { name: compat, kind: openai-compatible, base_url: "${origin}/v1", api_key_env: ${keyEnv} }`,
    `  - { name: claude, kind: anthropic, base_url: "${origin}/v1", api_key_env: ${keyEnv} }`,
    `  - { name: google, kind: gemini, base_url: "${origin}/v1beta", api_key_env: ${keyEnv} }`,
    `  - { name: oai, kind: openai, base_url: "${origin}/v1", api_key_env: ${keyEnv} }`,
    'models:',
    `  - { id: ${MODELS.chat}, upstream: compat, upstream_model: m-chat }`,
    `  - { id: ${MODELS.anthropic}, upstream: claude, upstream_model: claude-haiku-4-5 }`,
    `  - { id: ${MODELS.gemini}, upstream: google, upstream_model: gemini-2.0-flash }`,
    `  - { id: ${NATIVE_MODEL}, upstream: oai, upstream_model: gpt-4o }`,
  ];
}

/** Each upstream kind and its model, for a test per kind. */
export const KINDS = Object.entries(MODELS) as Array<[keyof typeof MODELS, string]>;

/** The names of the functions an upstream request offered, whatever its wire format. */
export function offeredTools(request: { body?: Record<string, unknown> | undefined }): string[] {
  const tools = (request.body?.tools ?? []) as Array<Record<string, unknown>>;
  return tools.flatMap((tool) => {
    if (Array.isArray(tool.functionDeclarations))
      return (tool.functionDeclarations as Array<Record<string, unknown>>).map((f) => String(f.name));
    const fn = tool.function as Record<string, unknown> | undefined;
    return [String(fn?.name ?? tool.name)];
  });
}
