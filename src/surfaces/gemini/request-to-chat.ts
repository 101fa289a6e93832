import { GatewayError } from '../../errors/gateway-error.js';
import { assertValid, boundedValidatorCompiler } from '../../http/bounded-validation.js';
import { ProblemList } from '../../http/validation-details.js';
import type { ChatMessage, ChatRequestBody } from '../../providers/provider-contract.js';
import type { GeminiGenerateRequest } from '../../wire/gemini.js';
import { unmappedFields, type TopLevelFields, type TranslationNotes } from '../translation-notes.js';
import { translatedGeminiSchema } from './gemini-schema.js';
import { mapGenerationConfig, mapToolConfig, mapTools } from './request-config.js';
import { contentsToMessages, systemText, type GeminiContext } from './request-parts.js';

/** Top-level fields the translation reads (the model is the URL's; a countTokens `generateContentRequest` names it too). */
const MAPPED_FIELDS: ReadonlySet<string> = new Set([
  'contents',
  'systemInstruction',
  'tools',
  'toolConfig',
  'generationConfig',
  'model',
]);

/** Top-level fields that only tag, hint or point at Google's side: left out for a non-Gemini upstream, named. */
const DROPPED_FIELDS: Readonly<Record<string, string>> = {
  safetySettings: "Gemini's safety filters are Gemini's only; the target applies its own",
  cachedContent: "a context cache lives on Google's side only; the request is sent without it",
  labels: "billing labels are Google's only",
  serviceTier: "Gemini's capacity tiers are not the target's",
  store: "Gemini's storage of the exchange is Gemini's only",
};

const TOP_LEVEL_FIELDS: TopLevelFields = {
  mapped: MAPPED_FIELDS,
  dropped: DROPPED_FIELDS,
  refusal: () => 'is not supported when the model is served by a non-Gemini upstream',
};

let validateTranslated: ReturnType<ReturnType<typeof boundedValidatorCompiler>> | undefined;

/**
 * A Gemini `generateContent` request as the chat request every provider serves (pure but for `notes`), for the
 * model the URL names. `systemInstruction` becomes the first message; `contents` become messages (request-parts.ts);
 * `generationConfig`, `tools` and `toolConfig` are mapped (request-config.ts). A field is mapped, dropped with a
 * notice (`notes`: X-Gateway-Dropped-Fields; refused instead for a model with `translation: strict`) or refused (400
 * capability_not_supported naming each), as docs/gemini.md tabulates; a function result that answers no call is a
 * 400 validation_failed. Without `notes` (the context-window count of a forwarded request, countTokens) dropped
 * fields are only left out.
 */
export function geminiToChat(
  body: GeminiGenerateRequest,
  model: string,
  options: { stream?: boolean; notes?: TranslationNotes | undefined } = {},
): ChatRequestBody {
  validateTranslated ??= boundedValidatorCompiler()({
    schema: translatedGeminiSchema,
    method: 'POST',
    url: '/v1beta/models/{model}:generateContent',
    httpPart: 'body',
  });
  assertValid(validateTranslated, body);
  const context: GeminiContext = { problems: new ProblemList(), invalid: new ProblemList(), notes: options.notes };
  unmappedFields(body, TOP_LEVEL_FIELDS, context);
  const messages: ChatMessage[] = [];
  if (body.systemInstruction !== undefined) {
    const system = systemText(body.systemInstruction, context);
    if (system !== '') messages.push({ role: 'system', content: system });
  }
  messages.push(...contentsToMessages(body.contents, context));
  const chat: ChatRequestBody = { model, messages };
  if (options.stream === true) chat.stream = true;
  if (body.generationConfig !== undefined) mapGenerationConfig(body.generationConfig, chat, context);
  if (body.tools !== undefined) mapTools(body.tools, chat, context);
  if (body.toolConfig !== undefined) mapToolConfig(body.toolConfig, chat, context);
  if (!context.invalid.empty) throw new GatewayError('validation_failed', context.invalid.details());
  if (!context.problems.empty) throw new GatewayError('capability_not_supported', context.problems.details());
  return chat;
}
