/** One line of a JSONL input, 1-based, without its line break (a CR before the LF is dropped too). */
export interface JsonlLine {
  number: number;
  text: string;
}

export class LineTooLongError extends Error {
  constructor(
    readonly line: number,
    readonly maxBytes: number,
  ) {
    super(`line ${line} is longer than ${maxBytes} bytes`);
  }
}

/**
 * Splits a byte stream into lines, each bounded by `maxLineBytes` (a longer one throws LineTooLongError before it is
 * held whole): memory stays at one line plus one chunk, whatever the file's size. Empty lines are skipped (a file
 * ending in a line break has no extra line).
 */
export async function* jsonlLines(source: AsyncIterable<Uint8Array>, maxLineBytes: number): AsyncGenerator<JsonlLine> {
  let parts: Buffer[] = [];
  let held = 0;
  let number = 0;
  const take = (tail: Buffer): JsonlLine | undefined => {
    number += 1;
    let line = parts.length === 0 ? tail : Buffer.concat([...parts, tail]);
    parts = [];
    held = 0;
    if (line.length > 0 && line[line.length - 1] === 0x0d) line = line.subarray(0, line.length - 1);
    if (line.length > maxLineBytes) throw new LineTooLongError(number, maxLineBytes);
    return line.length === 0 ? undefined : { number, text: line.toString('utf8') };
  };
  for await (const chunk of source) {
    let buffer = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    for (let at = buffer.indexOf(0x0a); at !== -1; at = buffer.indexOf(0x0a)) {
      const line = take(buffer.subarray(0, at));
      buffer = buffer.subarray(at + 1);
      if (line) yield line;
    }
    if (buffer.length > 0) {
      held += buffer.length;
      if (held > maxLineBytes + 1) throw new LineTooLongError(number + 1, maxLineBytes);
      parts.push(Buffer.from(buffer));
    }
  }
  if (held > 0) {
    const line = take(Buffer.alloc(0));
    if (line) yield line;
  }
}
