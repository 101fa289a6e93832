import { createHash } from 'node:crypto';
import { ContentTooLarge } from './file-contract.js';

/** What a write learnt of the bytes it stored. */
export interface ContentDigest {
  bytes: number;
  sha256: string;
}

/**
 * Passes `content` on in pieces of at most `pieceBytes` (a part of a larger chunk is a view, not a copy),
 * counting and hashing it on the way (SHA-256), and throws ContentTooLarge as soon as it passes `maxBytes`, before
 * that piece is handed on: a store writes only what fits. `digest()` is valid once the iteration ended.
 */
export function countedPieces(
  content: AsyncIterable<Uint8Array>,
  maxBytes: number,
  pieceBytes = Number.POSITIVE_INFINITY,
): { pieces: AsyncIterable<Uint8Array>; digest(): ContentDigest } {
  const hash = createHash('sha256');
  let bytes = 0;
  let sha256: string | undefined;
  async function* pieces(): AsyncGenerator<Uint8Array> {
    for await (const chunk of content) {
      bytes += chunk.byteLength;
      if (bytes > maxBytes) throw new ContentTooLarge(maxBytes);
      hash.update(chunk);
      for (let at = 0; at < chunk.byteLength; at += pieceBytes) {
        yield at === 0 && chunk.byteLength <= pieceBytes ? chunk : chunk.subarray(at, at + pieceBytes);
      }
    }
    sha256 = hash.digest('hex');
  }
  return {
    pieces: pieces(),
    digest() {
      if (sha256 === undefined) throw new Error('the content was not read to its end');
      return { bytes, sha256 };
    },
  };
}
