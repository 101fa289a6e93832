import { bpePieces } from '../tokens/bpe-pieces.js';
import type { Encoding } from '../tokens/token-count-lane.js';
import { chunkEncoder, type ChunkEncoder } from './chunk-encoder.js';
import { LoopSlice } from './loop-slice.js';

// The chunking parameter is read where chunks are made (the vector store service imports it from here).
export { AUTO_CHUNKING, chunkingOf, chunkingView, type ChunkingProblem } from './chunking-strategy.js';

export interface TextChunk {
  /** Its place among the file's chunks, from 0, with no gaps (whitespace-only windows are not counted). */
  seq: number;
  text: string;
  /** Its tokens in the chunking encoding. */
  tokens: number;
}

export interface ChunkOptions {
  maxTokens: number;
  /** Tokens each chunk repeats from the end of the one before (at most half of maxTokens). */
  overlapTokens: number;
  /** Chunks made at most; the rest of the text is left out (the caller bounds what a file may cost). */
  maxChunks?: number | undefined;
  /** The BPE the windows are counted in: cl100k_base, the one of OpenAI's embedding models, unless told. */
  encoding?: Encoding | undefined;
  /** Calls chunking off: the promise rejects with the signal's reason at the next slice. */
  signal?: AbortSignal | undefined;
}

/** The default bound on chunks per text: 10 MB of text at auto chunking (800 / 400) makes about 6,500. */
export const MAX_CHUNKS = 20_000;

/** A window of tokens being cut: the tokens from the current window's start on, and the chunks made. */
class Windows {
  readonly chunks: TextChunk[] = [];
  /** The tokens from the start of the next window on; its length is always a character boundary. */
  private ids: number[] = [];

  constructor(
    private readonly encoder: ChunkEncoder,
    private readonly options: ChunkOptions & { maxChunks: number },
  ) {}

  get full(): boolean {
    return this.chunks.length >= this.options.maxChunks;
  }

  /** Takes one piece's tokens and cuts every window that is whole now (one more token than fits is known). */
  add(ids: readonly number[]): void {
    for (const id of ids) this.ids.push(id);
    while (this.ids.length > this.options.maxTokens && !this.full) this.cut();
  }

  /** The last windows, once the text is all added. */
  finish(): void {
    while (this.ids.length > 0 && !this.full) {
      if (this.ids.length <= this.options.maxTokens) {
        this.emit(this.ids.length);
        this.ids = [];
      } else this.cut();
    }
  }

  private boundary(at: number): boolean {
    return at >= this.ids.length || this.encoder.startsCharacter(this.ids[at] as number);
  }

  /**
   * Cuts the window that starts at the first token: it ends at maxTokens, or earlier where a character starts (a
   * BPE token may hold part of a character; the window never splits one). Only when no character starts within
   * maxTokens (a run of tokens that are all parts of characters) does it end later, at the next one, at most at
   * the end of the piece (bpePieces cuts on characters). The next window starts overlapTokens before this one's
   * end, moved forward to a character start.
   */
  private cut(): void {
    const { maxTokens, overlapTokens } = this.options;
    let end = maxTokens;
    while (end > 0 && !this.boundary(end)) end--;
    if (end === 0) for (end = maxTokens + 1; !this.boundary(end); end++);
    this.emit(end);
    let next = Math.max(1, end - overlapTokens);
    while (next < end && !this.boundary(next)) next++;
    this.ids.splice(0, next);
  }

  private emit(end: number): void {
    const text = this.encoder.decode(this.ids, 0, end);
    if (text.trim().length === 0) return;
    this.chunks.push({ seq: this.chunks.length, text, tokens: end });
  }
}

/**
 * Cuts a text into overlapping windows of tokens, as OpenAI's static chunking does: each of at most `maxTokens`
 * tokens, each next one starting `maxTokens - overlapTokens` tokens after the one before, decoded back to text;
 * windows of whitespace only are dropped. The text is tokenized a piece at a time (bpePieces: the same tokens as
 * the whole, in pieces of at most 256 characters), and the loop turns every few ms, so a text of megabytes does
 * not hold the gateway. The encoder is loaded on the first call (about half a second, once per process).
 */
export async function chunkText(text: string, options: ChunkOptions): Promise<TextChunk[]> {
  const { maxTokens, overlapTokens } = options;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new RangeError('maxTokens must be a positive integer');
  if (!Number.isInteger(overlapTokens) || overlapTokens < 0 || overlapTokens * 2 > maxTokens)
    throw new RangeError('overlapTokens must be an integer from 0 to half of maxTokens');
  options.signal?.throwIfAborted();
  const encoder = await chunkEncoder(options.encoding ?? 'cl100k_base');
  const windows = new Windows(encoder, { ...options, maxChunks: options.maxChunks ?? MAX_CHUNKS });
  const slice = new LoopSlice(options.signal);
  for (const piece of bpePieces(text)) {
    windows.add(encoder.encode(piece));
    if (windows.full) return windows.chunks;
    if (slice.due()) await slice.pause();
  }
  windows.finish();
  return windows.chunks;
}
