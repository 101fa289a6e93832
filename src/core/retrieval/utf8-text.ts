import { LoopSlice } from './loop-slice.js';

/** Bytes decoded per slice: about a millisecond of TextDecoder work. */
const SLICE_BYTES = 1 << 20;

export type Utf8Result = { text: string; truncated: boolean } | { problem: string };

/**
 * Decodes a file's bytes as UTF-8 text, at most `maxChars` UTF-16 units of it (a longer text is cut, never in a
 * surrogate pair). Only the bytes that can reach `maxChars` are read (3 bytes per unit at most), a slice at a time.
 * A byte sequence that is not UTF-8 or a NUL byte (a binary file, or UTF-16 text) is a problem naming where.
 * A leading byte order mark is dropped, as TextDecoder does.
 */
export async function decodeUtf8(bytes: Uint8Array, maxChars: number, signal?: AbortSignal): Promise<Utf8Result> {
  const readable = Math.min(bytes.length, maxChars * 3 + 3);
  const nul = bytes.subarray(0, readable).indexOf(0);
  if (nul >= 0) return { problem: `it has a NUL byte at offset ${nul}, so it is not UTF-8 text (binary, or UTF-16)` };
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const slice = new LoopSlice(signal);
  const parts: string[] = [];
  let chars = 0;
  let decoded = 0;
  for (let at = 0; at < readable && chars < maxChars; at += SLICE_BYTES) {
    const end = Math.min(at + SLICE_BYTES, readable);
    decoded = end;
    let part: string;
    try {
      // `stream` keeps a character cut by the slice end for the next slice; the last slice of the whole file must
      // be complete. The slice end of a file read only in part (maxChars) may cut a character: it is dropped.
      part = decoder.decode(bytes.subarray(at, end), { stream: end < bytes.length });
    } catch {
      return { problem: `its bytes are not valid UTF-8 (in the ${SLICE_BYTES >> 20} MB from offset ${at})` };
    }
    parts.push(part);
    chars += part.length;
    if (slice.due()) await slice.pause();
  }
  let text = parts.join('');
  const truncated = text.length > maxChars || decoded < bytes.length;
  if (text.length > maxChars) text = cutAt(text, maxChars);
  return { text, truncated };
}

/** `text` cut to at most `max` UTF-16 units, never between the two halves of a surrogate pair. */
export function cutAt(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}
