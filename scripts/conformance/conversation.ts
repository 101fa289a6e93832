// What a mock upstream reads of a conversation to play a model's part (model-part.ts), whatever its API: the system
// text, what the user said, and the images the user sent. Each API's parser (api-*.ts) fills it from its own shapes.

/** An image as the upstream received it: its media type, and its size when it came inline. */
export interface ImageSeen {
  mediaType: string;
  /** Decoded bytes of an inline (base64) image. */
  bytes?: number;
  /** The address of an image sent by URL. */
  url?: string;
}

export interface Conversation {
  /** Every system or developer instruction, joined by newlines ('' when there is none). */
  system: string;
  /** The text of each user message, oldest first (tool results are not user text). */
  userTexts: string[];
  /** Every image in the user's messages, oldest first. */
  images: ImageSeen[];
}

export const NO_CONVERSATION: Conversation = { system: '', userTexts: [], images: [] };

/** The size of base64 data once decoded. */
export function base64Bytes(data: string): number {
  return Buffer.from(data, 'base64').length;
}

/** An image given as a `data:` URL (its media type and decoded size) or as an address. */
export function imageOfUrl(url: string): ImageSeen {
  const data = /^data:([^;,]+)(;base64)?,(.*)$/s.exec(url);
  if (data === null) return { mediaType: 'unknown', url: url.slice(0, 200) };
  const [, mediaType, base64, payload] = data;
  return {
    mediaType: mediaType as string,
    bytes: base64 === undefined ? Buffer.byteLength(decodeURIComponent(payload ?? '')) : base64Bytes(payload ?? ''),
  };
}

/** Joins the non-empty texts of a conversation's pieces. */
export function joinTexts(texts: string[]): string {
  return texts.filter((text) => text !== '').join('\n');
}
