// The bounds the WAL checkpointer (wal-checkpointer.ts) and its thread (wal-checkpoint-thread.ts) share.

/** The WAL's bounds (docs/capacity.md, "The SQLite WAL"). */
export interface CheckpointBounds {
  /**
   * Past this many bytes the thread copies the WAL back into the database (PASSIVE: no lock a writer waits on);
   * also the `journal_size_limit`, what the file is cut back to when the WAL starts over. SQLite's own automatic
   * checkpoint runs at 1000 pages (about 4 MB).
   */
  walBytes: number;
  /**
   * The WAL's bound under writes that never pause for as long as a copy takes: a commit that takes it past this
   * checkpoints, on the committing thread, what the thread has not copied yet (`wal_autocheckpoint`).
   */
  maxWalBytes: number;
  /** How often the WAL file's size is looked at (a `stat`): on the serving thread until the thread starts, then on it. */
  pollMs: number;
  /** With no commit for this long, the thread copies the WAL to its end and truncates it to zero bytes. */
  idleMs: number;
}

export const CHECKPOINT_BOUNDS: CheckpointBounds = {
  walBytes: 4 * 1024 * 1024,
  maxWalBytes: 16 * 1024 * 1024,
  pollMs: 100,
  idleMs: 2_000,
};

/** What the checkpointing thread is started with: the database file and the bounds it keeps the WAL within. */
export interface CheckpointThreadData extends CheckpointBounds {
  path: string;
}
