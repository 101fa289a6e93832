/**
 * Whether `error` says the storage under a store is full (docs/files.md, "When the disk is full"): the file system
 * (`ENOSPC`, or `EDQUOT`, a disk quota), SQLite (`SQLITE_FULL`, primary result code 13: "database or disk is
 * full") or PostgreSQL (SQLSTATE class 53 `53100 disk_full`). The one place that knows the drivers' spellings.
 */
export function isDiskFull(error: unknown): boolean {
  const { code, errcode } = (error ?? {}) as { code?: unknown; errcode?: unknown };
  if (code === 'ENOSPC' || code === 'EDQUOT' || code === '53100') return true;
  return typeof errcode === 'number' && (errcode & 0xff) === SQLITE_FULL;
}

const SQLITE_FULL = 13;
