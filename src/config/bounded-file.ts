import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';

/**
 * The most bytes read from each kind of file the configuration names (docs/config.md, "Files the config names").
 * A file over its bound is refused before any of it is parsed: none of these is ever that large on purpose.
 */
export const FILE_BOUNDS = {
  /** `api_key_file`, webhook `secrets[].file`, `password_hash_file`, the dev admin token: one line each. */
  secret: 64 * 1024,
  /** The config file itself (`GATEWAY_CONFIG`). */
  config: 4 * 1024 * 1024,
  /** `price_catalog` (the committed one is about 11 KB). */
  priceCatalog: 4 * 1024 * 1024,
  /** `server.tls.cert_file` and `key_file` (a chain of a few certificates is a few KB). */
  certificate: 1024 * 1024,
} as const;

/** Why a named file was not read: its errno code, or what kind of file it is, or that it is too large. */
export class FileReadError extends Error {
  constructor(
    /** Fits in `cannot read <path> (<reason>)`; never any of the file's content. */
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'FileReadError';
  }
}

/** The reason a read failed, for `cannot read <path> (<reason>)`: an errno code, or ours. */
export function readFailure(error: unknown): string {
  if (error instanceof FileReadError) return error.reason;
  return (error as NodeJS.ErrnoException).code ?? 'error';
}

/**
 * O_NONBLOCK: opening a FIFO never waits for a writer (and reading one would not wait for data), so the fstat
 * that follows can refuse it. A regular file's reads ignore the flag.
 */
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);
const CHUNK = 64 * 1024;

function kindOf(stat: Stats): string {
  if (stat.isFIFO()) return 'a FIFO';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  if (stat.isDirectory()) return 'a directory';
  if (stat.isSocket()) return 'a socket';
  return 'not a file';
}

function judge(stat: Stats, maxBytes: number): void {
  if (!stat.isFile()) throw new FileReadError(`not a regular file: ${kindOf(stat)}`);
  if (stat.size > maxBytes) throw tooLarge(maxBytes);
}

const tooLarge = (maxBytes: number) => new FileReadError(`larger than ${maxBytes} bytes, the bound for this file`);

/**
 * A regular file's bytes, at most `maxBytes` of them; throws FileReadError (or the open's errno error) for
 * anything else. Synchronous, for start-up and the config reader's own thread: it never waits on a FIFO, never
 * reads a device, and reads at most `maxBytes + 1` bytes even from a file that grows (or that reports no size, as
 * /proc's do).
 */
export function readBoundedFileSync(path: string, maxBytes: number): Buffer {
  const fd = openSync(path, OPEN_FLAGS);
  try {
    judge(fstatSync(fd), maxBytes);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(CHUNK, maxBytes + 1 - total));
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) break;
      chunks.push(chunk.subarray(0, read));
      total += read;
      if (total > maxBytes) throw tooLarge(maxBytes);
    }
    return Buffer.concat(chunks, total);
  } finally {
    closeSync(fd);
  }
}

/** The same as readBoundedFileSync, off the event loop (the reads run on libuv's pool): for what runs while serving. */
export async function readBoundedFile(path: string, maxBytes: number): Promise<Buffer> {
  const handle = await open(path, OPEN_FLAGS);
  try {
    judge(await handle.stat(), maxBytes);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(CHUNK, maxBytes + 1 - total));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > maxBytes) throw tooLarge(maxBytes);
    }
    return Buffer.concat(chunks, total);
  } finally {
    await handle.close();
  }
}
