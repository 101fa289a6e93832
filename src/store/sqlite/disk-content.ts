import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { open, rename, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { countedPieces, type ContentDigest } from '../content-stream.js';

/** The name a write streams to before its rename: `.partial-` and 18 random hex digits. */
export const PARTIAL_PREFIX = '.partial-';

/**
 * Bytes kept as files in one folder (the embedded store's files and parts), written under a temporary name and
 * renamed into place once whole and flushed to disk (`flush`: fsync before close), so a reader never sees a half
 * file under its final name. The store writes its record after the rename and deletes it before the unlink, so a
 * crash (kill -9, power loss) can leave a `.partial-*` file (mid-write) or a whole file no record names (between
 * the two steps). Nothing here removes them: the stores' `sweepStrays` (stray-bytes.ts) does, at start-up and
 * hourly (src/wiring/file-strays-wiring.ts), once they are older than `files.stray_grace_seconds`.
 */
export class DiskContent {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  pathOf(name: string): string {
    return join(this.dir, name);
  }

  /** Streams `content` to `name` (a safe name: the store's own ids); at most `maxBytes`, else nothing is kept. */
  async write(name: string, content: AsyncIterable<Uint8Array>, maxBytes: number): Promise<ContentDigest> {
    const temporary = this.pathOf(`${PARTIAL_PREFIX}${randomBytes(9).toString('hex')}`);
    const counted = countedPieces(content, maxBytes);
    try {
      await pipeline(
        Readable.from(counted.pieces, { objectMode: false }),
        createWriteStream(temporary, { flush: true }),
      );
      await rename(temporary, this.pathOf(name));
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      throw error;
    }
    return counted.digest();
  }

  /** The bytes of `name`; the file is opened first, so a delete after this call still lets the read finish. */
  async open(name: string): Promise<Readable | undefined> {
    try {
      const handle = await open(this.pathOf(name), 'r');
      return handle.createReadStream();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async remove(name: string): Promise<void> {
    await rm(this.pathOf(name), { force: true, recursive: true });
  }
}
