import { GatewayError } from '../../errors/gateway-error.js';
import { objectOf, type JsonObject } from '../../wire/json.js';
import { splitDataUrl } from '../../wire/openai-chat.js';
import type { AnthropicContentBlock } from '../../wire/anthropic.js';

const IMAGE_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/**
 * A chat `file` part that carries its bytes (`file.file_data`, a base64 `data:` URL: the caller's, or one of the
 * gateway's files put inline by core/files/file-forwarding.ts) as Anthropic's block for them
 * (https://docs.anthropic.com/en/docs/build-with-claude/pdf-support): a PDF as a `document` with a base64 source,
 * text as a `document` with a text source (its bytes decoded as UTF-8), an image as an `image`; the filename as the
 * document's `title`. Undefined for a part without `file_data` (sent as it is). Any other type: a 400, before the
 * call (Anthropic takes no other inline file).
 */
export function fileBlockOf(part: JsonObject): AnthropicContentBlock | undefined {
  const file = objectOf(part.file);
  const data = file?.file_data;
  if (typeof data !== 'string') return undefined;
  const inline = splitDataUrl(data);
  const type = inline?.mediaType.toLowerCase() ?? '';
  const title =
    typeof file?.filename === 'string' && file.filename !== '' ? { title: file.filename.slice(0, 500) } : {};
  if (inline && type === 'application/pdf')
    return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: inline.data }, ...title };
  if (inline && type.startsWith('text/'))
    return {
      type: 'document',
      source: { type: 'text', media_type: 'text/plain', data: Buffer.from(inline.data, 'base64').toString('utf8') },
      ...title,
    };
  if (inline && IMAGE_TYPES.has(type))
    return { type: 'image', source: { type: 'base64', media_type: type, data: inline.data } };
  throw new GatewayError('file_not_forwardable', {
    field: 'messages[].content[].file.file_data',
    problem: `Anthropic takes PDFs, text and images (jpeg, png, gif, webp) inline, not ${inline ? `"${type.slice(0, 100)}"` : 'this (not a base64 data: URL)'}`,
  });
}
