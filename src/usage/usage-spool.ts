import { closeSync, fdatasync, fdatasyncSync, ftruncateSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { close as closeFd } from 'node:fs';
import { rmdir, unlink, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import type { SpoolMark, UsageRows, UsageStore } from '../store/store-contract.js';
import { marksOf, spoolLine, spoolScratch, without } from './spool-lines.js';
import { SPOOL_HEARTBEAT_MS, type SpoolOwner } from './spool-owner.js';
import type { UsageLog } from './usage-log.js';

/** A segment is closed (and a new one begun) once it holds this many bytes (~13,000 records). */
export const SPOOL_SEGMENT_BYTES = 4 * 1024 * 1024;
/** Past this many bytes waiting in the spool (a store down for hours), records are no longer spooled. */
export const MAX_SPOOL_BYTES = 1024 * 1024 * 1024;
/** How often what was appended is flushed to the disk itself (fdatasync): what an operating-system crash can lose. */
export const SPOOL_SYNC_MS = 1_000;
/** At most one log line a minute about records that could not be spooled. */
const COMPLAINT_EVERY_MS = 60_000;

/** The folder of every spool of a data folder. */
export const SPOOL_FOLDER = 'usage-spool';

/** A segment file's name: its first record's number, zero-padded so that names sort as numbers do. */
export function segmentName(firstSeq: number): string {
  return `${String(firstSeq).padStart(16, '0')}.spool`;
}

export const SEGMENT_NAME = /^[0-9]{16}\.spool$/;

/** The spool's sizes (tests make them small). */
export interface SpoolBounds {
  segmentBytes: number;
  maxBytes: number;
}

interface Segment {
  readonly first: number;
  /** One past the last record appended. */
  next: number;
  bytes: number;
  /** Records of it in the store (or set aside by it). */
  confirmed: number;
  readonly path: string;
  fd: number | undefined;
  syncing: boolean;
  /** Close the file once the sync in flight is over. */
  closeAfterSync: boolean;
}

/**
 * The local write-ahead log of one process's usage records (docs/usage.md, "Durability"): a folder
 * `DATA_DIR/usage-spool/<owner>` of append-only segment files. Every record is appended (one `write`, no fsync)
 * before its answer's last bytes are written, numbered 1, 2, 3... in this spool. Once the store has a record (its
 * mark was written with it, src/store/store-contract.ts `SpoolMark`), the spool is told (`confirm`); a segment whose
 * records are all stored is deleted, then its marks. A process that dies leaves its folder behind; another one (or
 * its own successor) replays it (src/usage/spool-replay.ts). The bytes of a `write` are the kernel's at once, so a
 * killed process loses nothing; they reach the disk within SPOOL_SYNC_MS (fdatasync off the event loop), so an
 * operating-system crash loses at most that much.
 */
export class UsageSpool {
  private current: Segment | undefined;
  /** Closed segments not yet all stored, oldest first. */
  private readonly closed: Segment[] = [];
  /** Segments being deleted: their marks may go only once they are gone. */
  private readonly deleting = new Set<Segment>();
  private nextSeq = 1;
  private bytes = 0;
  private readonly scratch = spoolScratch();
  private dirty = false;
  private readonly syncTimer: NodeJS.Timeout;
  private readonly heartbeat: NodeJS.Timeout;
  private unspooled = 0;
  private complainedAt = 0;
  private closing = false;
  /** Lines appended in this turn of the event loop, written together at its end. */
  private pending = '';
  private pendingLines = 0;
  private waiters: Array<() => void> = [];
  private scheduled = false;
  /** Records only in the spool (dropped from the recorder's memory), by runs of numbers. */
  private stranded: SpoolMark[] = [];
  /** Deletions in flight (the close waits for them). */
  private readonly deletions = new Set<Promise<void>>();

  private constructor(
    readonly owner: SpoolOwner,
    readonly dir: string,
    private readonly store: UsageStore,
    private readonly log: UsageLog,
    private readonly bounds: SpoolBounds,
  ) {
    this.syncTimer = setInterval(() => this.sync(), SPOOL_SYNC_MS);
    this.syncTimer.unref();
    // The heartbeat other pid namespaces judge this spool by (./spool-owner.ts).
    this.heartbeat = setInterval(() => {
      const now = new Date();
      utimes(this.dir, now, now).catch(() => undefined);
    }, SPOOL_HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  /** The name its records' marks carry. */
  get id(): string {
    return this.owner.token;
  }

  /** Creates this process's spool folder under `root` (DATA_DIR/usage-spool). */
  static open(
    root: string,
    owner: SpoolOwner,
    store: UsageStore,
    log: UsageLog,
    bounds: Partial<SpoolBounds> = {},
  ): UsageSpool {
    mkdirSync(root, { recursive: true, mode: 0o700 });
    const dir = join(root, owner.token);
    mkdirSync(dir, { mode: 0o700 });
    return new UsageSpool(owner, dir, store, log, {
      segmentBytes: bounds.segmentBytes ?? SPOOL_SEGMENT_BYTES,
      maxBytes: bounds.maxBytes ?? MAX_SPOOL_BYTES,
    });
  }

  /**
   * Appends row `row` of `rows`: its number in the spool, or 0 when it could not be spooled (the spool past its
   * bound: it is then only in memory, as without a spool, and logged). The line is written with the others of this
   * turn of the event loop, in one `write`, before anything that waits for it (`afterWrite`) goes on.
   */
  append(rows: UsageRows, row: number): number {
    if (this.bytes + this.pending.length >= this.bounds.maxBytes) return this.notSpooled(undefined, 1);
    const seq = this.nextSeq;
    this.nextSeq = seq + 1;
    this.current ??= newSegment(join(this.dir, segmentName(seq)), seq);
    this.current.next = seq + 1;
    this.pending += spoolLine(seq, rows, row, this.scratch);
    this.pendingLines += 1;
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.writePending);
    }
    return seq;
  }

  /**
   * Calls `release` once the lines appended so far are written (at once when none waits): what holds an answer's
   * last bytes until its record is in the spool (http/request-end.ts, the answer gate).
   */
  afterWrite(release: () => void): void {
    if (this.pendingLines === 0) release();
    else this.waiters.push(release);
  }

  /** The lines of this turn, in one write (a `write` is most of what a record costs the spool: group them). */
  private readonly writePending = (): void => {
    this.scheduled = false;
    const text = this.pending;
    const lines = this.pendingLines;
    const waiters = this.waiters;
    this.pending = '';
    this.pendingLines = 0;
    this.waiters = [];
    if (lines > 0) this.write(this.current as Segment, text, lines);
    for (const release of waiters) release();
  };

  private write(segment: Segment, text: string, lines: number): void {
    const length = Buffer.byteLength(text);
    try {
      segment.fd ??= openSync(segment.path, 'a', 0o600);
      const written = writeSync(segment.fd, text);
      if (written !== length) throw new Error(`short write: ${written} of ${length} bytes`);
    } catch (error) {
      // A short or failed write (a disk that just filled): what it wrote is cut off, so the next lines start clean.
      try {
        if (segment.fd !== undefined) ftruncateSync(segment.fd, segment.bytes);
      } catch {
        // The lines may stay cut; a replay skips a line it cannot read.
      }
      this.notSpooled(error, lines);
      return;
    }
    segment.bytes += length;
    this.bytes += length;
    this.dirty = true;
    if (segment.bytes >= this.bounds.segmentBytes) this.rotate();
  }

  /** These records are in the store (or were set aside): a segment all of whose records are is deleted. */
  confirm(marks: readonly SpoolMark[]): void {
    const segments = this.current ? [...this.closed, this.current] : this.closed;
    for (const mark of marks) {
      for (const segment of segments) {
        const overlap = Math.min(mark.last + 1, segment.next) - Math.max(mark.first, segment.first);
        if (overlap > 0) segment.confirmed += overlap;
      }
    }
    if (this.stranded.length > 0) this.stranded = without(this.stranded, marks);
    // Any closed segment whose records are all stored goes (one that holds stranded records waits for them).
    for (const segment of this.closed.filter(done)) {
      this.closed.splice(this.closed.indexOf(segment), 1);
      this.delete(segment);
    }
    // An idle spool keeps no file: the current segment goes too once all of it is stored (and written).
    if (this.current && this.current.next > this.current.first && done(this.current) && this.pendingLines === 0) {
      const segment = this.current;
      this.current = undefined;
      this.delete(segment);
    }
  }

  /**
   * Records the recorder dropped from memory (the store was down too long, src/usage/usage-recorder.ts): they are
   * only here now, and are written from here once the store takes records again (`strandedSegments`).
   */
  strand(seqs: readonly number[]): void {
    this.stranded.push(...marksOf(this.id, seqs));
  }

  get hasStranded(): boolean {
    return this.stranded.length > 0;
  }

  /**
   * The segments that hold stranded records, with those records' numbers; the current segment is closed first when it
   * holds some (nothing is appended to a segment being read).
   */
  strandedSegments(): Array<{ path: string; marks: SpoolMark[] }> {
    const holds = (segment: Segment) => this.stranded.some((m) => m.first < segment.next && m.last >= segment.first);
    if (this.current && holds(this.current)) {
      this.writePending();
      this.rotate();
    }
    return this.closed.filter(holds).map((segment) => ({
      path: segment.path,
      marks: this.stranded
        .filter((m) => m.first < segment.next && m.last >= segment.first)
        .map((m) => ({ ...m, first: Math.max(m.first, segment.first), last: Math.min(m.last, segment.next - 1) })),
    }));
  }

  /** Records that could not be spooled since the start. */
  get notSpooledCount(): number {
    return this.unspooled;
  }

  /**
   * At shutdown, after the recorder's last write: when every record is stored, the folder is removed with its marks;
   * otherwise it stays, and the next start replays it.
   */
  async close(): Promise<void> {
    this.writePending();
    clearInterval(this.syncTimer);
    clearInterval(this.heartbeat);
    this.closing = true;
    const all = this.current ? [...this.closed, this.current] : [...this.closed];
    const stored = all.every(done);
    for (const segment of all) {
      if (segment.fd === undefined) continue;
      if (!stored) fdatasyncSync(segment.fd);
      closeSync(segment.fd);
      segment.fd = undefined;
    }
    await Promise.all(this.deletions);
    if (!stored) {
      this.log.warn(
        { spool: this.dir, records: all.reduce((n, s) => n + s.next - s.first - s.confirmed, 0) },
        'usage records not yet stored stay in the spool; the next start writes them',
      );
      return;
    }
    await Promise.all(all.map((segment) => unlink(segment.path).catch(() => undefined)));
    await rmdir(this.dir);
    await this.store.forgetSpool(this.id);
  }

  /** Closes the current segment (after one last sync); the next record begins another. */
  private rotate(): void {
    const segment = this.current;
    if (!segment) return;
    this.current = undefined;
    this.closed.push(segment);
    if (segment.syncing) segment.closeAfterSync = true;
    else this.syncSegment(segment, true);
  }

  /** Once a second when something was appended: the current segment's bytes to the disk, off the event loop. */
  private sync(): void {
    if (!this.dirty || !this.current || this.current.syncing) return;
    this.dirty = false;
    this.syncSegment(this.current, false);
  }

  private syncSegment(segment: Segment, thenClose: boolean): void {
    const fd = segment.fd;
    if (fd === undefined) return;
    segment.syncing = true;
    segment.closeAfterSync ||= thenClose;
    fdatasync(fd, (error) => {
      segment.syncing = false;
      if (error && !this.closing)
        this.log.warn({ err: error, spool: this.dir }, 'the usage spool could not be flushed to disk');
      if (segment.closeAfterSync && segment.fd !== undefined) {
        segment.fd = undefined;
        closeFd(fd, () => undefined);
      }
    });
  }

  /** Deletes a segment whose records are all stored, then the marks no file needs any more. */
  private delete(segment: Segment): void {
    this.deleting.add(segment);
    this.bytes -= segment.bytes;
    if (segment.fd !== undefined && !segment.syncing) {
      closeSync(segment.fd);
      segment.fd = undefined;
    } else segment.closeAfterSync = true;
    const deletion = unlink(segment.path)
      .then(() => {
        this.deleting.delete(segment);
        return this.store.forgetSpool(this.id, this.oldestKept());
      })
      .catch((error: unknown) =>
        this.log.warn({ err: error, spool: this.dir }, 'a usage spool segment was not deleted'),
      )
      .finally(() => this.deletions.delete(deletion));
    this.deletions.add(deletion);
  }

  /** The first record of the oldest segment still on disk: marks that end before it belong to no file. */
  private oldestKept(): number {
    let oldest = this.current?.first ?? this.nextSeq;
    for (const segment of this.closed) oldest = Math.min(oldest, segment.first);
    for (const segment of this.deleting) oldest = Math.min(oldest, segment.first);
    return oldest;
  }

  private notSpooled(error: unknown, lines: number): number {
    this.unspooled += lines;
    const now = Date.now();
    if (now - this.complainedAt >= COMPLAINT_EVERY_MS) {
      this.complainedAt = now;
      this.log.error(
        { err: error, spool: this.dir, not_spooled: this.unspooled, spool_bytes: this.bytes },
        error === undefined
          ? 'the usage spool is full: new usage records are kept in memory only until the store takes them'
          : 'a usage record could not be written to the spool: it is kept in memory only until the store takes it',
      );
    }
    return 0;
  }
}

function newSegment(path: string, first: number): Segment {
  return { first, next: first, bytes: 0, confirmed: 0, path, fd: undefined, syncing: false, closeAfterSync: false };
}

function done(segment: Segment): boolean {
  return segment.confirmed >= segment.next - segment.first;
}
