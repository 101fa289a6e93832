import { GatewayError } from '../../errors/gateway-error.js';
import { imageSource, parseToolArguments, textOf } from '../chat-content.js';
import type { ChatMessage, ChatRequestBody } from '../provider-contract.js';
import { splitDataUrl } from '../../wire/openai-chat.js';
import type {
  GeminiContent,
  GeminiFunctionDeclaration,
  GeminiGenerateRequest,
  GeminiGenerationConfig,
  GeminiPart,
  GeminiRole,
  GeminiSchema,
  GeminiTool,
  GeminiToolConfig,
} from '../../wire/gemini.js';
import { UNSIGNED_CALL_SIGNATURE, signsFunctionCalls, thinkingConfigFor } from './thinking.js';

/**
 * The chat body as a Gemini `generateContent` request (pure). System and developer messages become
 * `systemInstruction`; assistant turns are `model` turns; tool calls become `functionCall` parts and tool results
 * `functionResponse` parts (named after the call they answer, which Gemini needs and OpenAI's tool message lacks);
 * sampling fields go to `generationConfig`; tools to `functionDeclarations`, tool_choice to `toolConfig`.
 */
export function toGeminiRequest(body: ChatRequestBody): GeminiGenerateRequest {
  const system: string[] = [];
  const contents: Array<GeminiContent & { role: GeminiRole }> = [];
  const callNames = new Map<string, string>();
  const signed = signsFunctionCalls(body.model);
  for (const message of body.messages) {
    if (message.role === 'system' || message.role === 'developer') {
      system.push(textOf(message.content));
      continue;
    }
    const role = message.role === 'assistant' ? 'model' : 'user';
    const parts = partsOf(message, callNames, signed);
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  }
  const out: GeminiGenerateRequest = { contents };
  if (system.length > 0) out.systemInstruction = { parts: [{ text: system.join('\n\n') }] };
  const generation: GeminiGenerationConfig = {};
  if (body.temperature !== undefined) generation.temperature = body.temperature;
  if (body.top_p !== undefined) generation.topP = body.top_p;
  const maxTokens = body.max_tokens ?? body.max_completion_tokens;
  if (typeof maxTokens === 'number') generation.maxOutputTokens = maxTokens;
  if (body.stop !== undefined && body.stop !== null)
    generation.stopSequences = (Array.isArray(body.stop) ? body.stop : [body.stop]) as string[];
  if (typeof body.n === 'number') generation.candidateCount = body.n;
  if (typeof body.seed === 'number') generation.seed = body.seed;
  if (typeof body.presence_penalty === 'number') generation.presencePenalty = body.presence_penalty;
  if (typeof body.frequency_penalty === 'number') generation.frequencyPenalty = body.frequency_penalty;
  const format = body.response_format as { type?: unknown; json_schema?: { schema?: unknown } } | undefined;
  if (format?.type === 'json_object') generation.responseMimeType = 'application/json';
  // The chat body's JSON Schema, sent as it came (the caller's schema is Gemini's to judge).
  if (format?.type === 'json_schema')
    Object.assign(generation, {
      responseMimeType: 'application/json',
      responseSchema: format.json_schema?.schema as GeminiSchema | undefined,
    });
  const thinkingConfig = thinkingConfigFor(body.reasoning_effort, body.model);
  if (thinkingConfig) generation.thinkingConfig = thinkingConfig;
  if (Object.keys(generation).length > 0) out.generationConfig = generation;
  const tools: GeminiTool[] =
    Array.isArray(body.tools) && body.tools.length > 0 ? [{ functionDeclarations: body.tools.map(toDeclaration) }] : [];
  // Chat's `web_search_options` (the gateway's built-in web search) is Google Search grounding; it has no options here.
  if (typeof body.web_search_options === 'object' && body.web_search_options !== null) tools.push({ googleSearch: {} });
  if (tools.length > 0) out.tools = tools;
  const toolConfig = toToolConfig(body.tool_choice);
  if (toolConfig) out.toolConfig = toolConfig;
  return out;
}

function partsOf(message: ChatMessage, callNames: Map<string, string>, signed: boolean): GeminiPart[] {
  if (message.role === 'tool') {
    const id = message.tool_call_id ?? '';
    const name = callNames.get(id);
    if (!name) {
      throw new GatewayError('validation_failed', {
        errors: [
          {
            field: 'messages[].tool_call_id',
            problem: `no earlier assistant tool call has the id "${id.slice(0, 100)}" (Gemini needs the function name)`,
          },
        ],
      });
    }
    return [{ functionResponse: { name, response: responseObject(textOf(message.content)) } }];
  }
  const parts: GeminiPart[] = [];
  if (typeof message.content === 'string') {
    if (message.content.length > 0) parts.push({ text: message.content });
  } else if (Array.isArray(message.content)) {
    for (const part of message.content) parts.push(toGeminiPart(part));
  }
  for (const [i, call] of (message.tool_calls ?? []).entries()) {
    callNames.set(call.id, call.function.name);
    // Arguments that are JSON but not an object are sent as they are: Gemini refuses them itself.
    const args = parseToolArguments(call.function.arguments, call.id, 'Gemini') as Record<string, unknown>;
    const part: GeminiPart = { functionCall: { name: call.function.name, args } };
    // Gemini signs only the first of parallel calls.
    if (signed && i === 0) part.thoughtSignature = UNSIGNED_CALL_SIGNATURE;
    parts.push(part);
  }
  if (parts.length === 0) parts.push({ text: '' });
  return parts;
}

/** A tool result as Gemini's `response` object: a JSON object as is, anything else under `content`. */
function responseObject(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // not JSON: wrapped below
  }
  return { content: text };
}

function toGeminiPart(part: Record<string, unknown>): GeminiPart {
  if (part.type === 'text') return { text: String(part.text ?? '') };
  if (part.type === 'image_url') {
    const source = imageSource(part);
    return 'url' in source
      ? { fileData: { fileUri: source.url } }
      : { inlineData: { mimeType: source.mediaType, data: source.data } };
  }
  if (part.type === 'file') {
    // A file with its bytes (the caller's `file_data`, or a gateway file put inline: core/files/file-forwarding.ts).
    const data = (part.file as { file_data?: unknown } | undefined)?.file_data;
    const inline = typeof data === 'string' ? splitDataUrl(data) : undefined;
    if (inline) return { inlineData: { mimeType: inline.mediaType, data: inline.data } };
  }
  return part; // a part type chat has and Gemini not: sent as it is, for Gemini to refuse
}

/**
 * A function tool as a declaration. Its parameters go as `parametersJsonSchema` (JSON Schema as callers write it),
 * not `parameters` (Gemini's OpenAPI subset, which refuses keys such as `$schema`, `additionalProperties` or
 * `propertyNames` that Claude Code's and most SDKs' tool schemas carry).
 */
function toDeclaration(tool: unknown): GeminiFunctionDeclaration {
  const fn = (tool as { function?: { name?: unknown; description?: unknown; parameters?: unknown } } | null)?.function;
  const out: GeminiFunctionDeclaration = { name: String(fn?.name ?? '') };
  if (typeof fn?.description === 'string') out.description = fn.description;
  if (fn?.parameters !== undefined) out.parametersJsonSchema = fn.parameters;
  return out;
}

function toToolConfig(choice: unknown): GeminiToolConfig | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (choice === 'auto') return { functionCallingConfig: { mode: 'AUTO' } };
  if (choice === 'required') return { functionCallingConfig: { mode: 'ANY' } };
  if (choice === 'none') return { functionCallingConfig: { mode: 'NONE' } };
  const name = (choice as { function?: { name?: unknown } }).function?.name;
  if (typeof name === 'string') return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [name] } };
  return undefined;
}
