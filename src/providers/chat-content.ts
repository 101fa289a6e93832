import { GatewayError } from '../errors/gateway-error.js';
import { objectOf, type JsonObject } from '../wire/json.js';
import { splitDataUrl } from '../wire/openai-chat.js';
import type { ChatMessage } from './provider-contract.js';

/** The text of a message's content: a string as is, the text parts of a parts array joined, else empty. */
export function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p.type === 'text' ? String(p.text ?? '') : '')).join('');
  return '';
}

/** A tool call's `arguments` string as the object a provider with structured tool input wants (400 if not JSON). */
export function parseToolArguments(text: string, id: string, provider: string): unknown {
  try {
    return text.trim() === '' ? {} : (JSON.parse(text) as unknown);
  } catch {
    throw new GatewayError('validation_failed', {
      errors: [
        {
          field: 'messages[].tool_calls[].function.arguments',
          problem: `tool call ${id}: arguments must be a JSON object for ${provider}`,
        },
      ],
    });
  }
}

/** An OpenAI `image_url` part's URL ('' when it has none). */
export function imageUrlOfPart(part: JsonObject): string {
  return String(objectOf(part.image_url)?.url ?? '');
}

/** An OpenAI `image_url` part: a base64 `data:` URL split into media type and data (src/wire/openai-chat.ts), or a plain URL. */
export function imageSource(part: JsonObject): { mediaType: string; data: string } | { url: string } {
  const url = imageUrlOfPart(part);
  return splitDataUrl(url) ?? { url };
}
