import type { Encoding } from '../tokens/token-count-lane.js';

/** Each token's text, or its bytes when they are not UTF-8 alone (a part of a character), by token id. */
type Ranks = readonly (string | readonly number[] | undefined)[];

interface Encoder {
  encode(text: string, options: { disallowedSpecial: Set<string> }): number[];
}

/**
 * Text that reads like a special token (`<|endoftext|>`) is cut and embedded as the text it is; gpt-tokenizer's
 * default refuses it with an exception.
 */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * gpt-tokenizer's encoder with its rank table, for cutting texts at token boundaries and decoding the pieces back
 * with a decoder of our own. (gpt-tokenizer's `decode` shares one streaming TextDecoder between every call, so a
 * window that ended inside a character would leave its bytes to the next window's text.)
 */
export class ChunkEncoder {
  constructor(
    private readonly encoder: Encoder,
    private readonly ranks: Ranks,
  ) {}

  encode(text: string): number[] {
    return this.encoder.encode(text, AS_TEXT);
  }

  /**
   * Whether a character starts where token `id` starts: a token whose bytes are UTF-8 alone always does; one
   * stored as bytes does unless its first byte continues a character (0b10xxxxxx).
   */
  startsCharacter(id: number): boolean {
    const value = this.ranks[id];
    return typeof value !== 'object' || ((value[0] ?? 0) & 0xc0) !== 0x80;
  }

  /** The text of `ids[from..to)`, which start and end on character boundaries. */
  decode(ids: readonly number[], from: number, to: number): string {
    const decoder = new TextDecoder('utf-8');
    let text = '';
    let bytes: number[] = [];
    for (let i = from; i < to; i++) {
      const value = this.ranks[ids[i] as number];
      if (typeof value === 'string') {
        if (bytes.length > 0) text += decoder.decode(new Uint8Array(bytes));
        bytes = [];
        text += value;
      } else if (value) bytes.push(...value);
    }
    if (bytes.length > 0) text += decoder.decode(new Uint8Array(bytes));
    return text;
  }
}

const loaded = new Map<Encoding, Promise<ChunkEncoder>>();

/**
 * The encoder for `encoding`, loaded on first use (gpt-tokenizer builds its ~200,000 ranks then: about half a
 * second, once per process) and shared after. The rank table is the module the encoder itself was built from, so
 * it costs no second copy.
 */
export function chunkEncoder(encoding: Encoding): Promise<ChunkEncoder> {
  let encoder = loaded.get(encoding);
  if (!encoder) {
    encoder = (
      encoding === 'o200k_base'
        ? Promise.all([import('gpt-tokenizer/encoding/o200k_base'), import('gpt-tokenizer/bpeRanks/o200k_base')])
        : Promise.all([import('gpt-tokenizer/encoding/cl100k_base'), import('gpt-tokenizer/bpeRanks/cl100k_base')])
    ).then(([tokenizer, ranks]) => new ChunkEncoder(tokenizer, ranks.default));
    encoder.catch(() => loaded.delete(encoding));
    loaded.set(encoding, encoder);
  }
  return encoder;
}
