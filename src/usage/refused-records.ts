import { UsageRowsRefused } from '../store/usage-sql.js';

export interface RefusedRecords<T> {
  /** Records not written because the store then failed otherwise (down, busy): kept for the next batch. */
  unwritten: T[];
  /** That other failure, when there was one. */
  error?: unknown;
}

/**
 * Writes `records`, which the store refused as one write (`refused`) because of some value in them, all but the
 * refused ones: the records are halved and each half written (`append`), a refused half halved again, until each
 * refused record stands alone and is handed to `setAside` (k refused records among n cost about 2k·log2(n/k)
 * writes: 18 for one in a batch of 500). A record never blocks the others, and is never retried: the database would
 * refuse it again. If the store fails otherwise meanwhile (down, busy), what is not written yet is given back.
 */
export async function writeAroundRefused<T>(
  append: (records: readonly T[]) => Promise<void>,
  records: readonly T[],
  refused: UsageRowsRefused,
  setAside: (record: T, error: UsageRowsRefused) => void,
): Promise<RefusedRecords<T>> {
  if (records.length === 1) {
    setAside(records[0] as T, refused);
    return { unwritten: [] };
  }
  const parts = halves(records);
  for (let part = parts.shift(); part !== undefined; part = parts.shift()) {
    const error = await appendOrError(append, part);
    if (error === undefined) continue;
    if (!(error instanceof UsageRowsRefused)) return { unwritten: [part, ...parts].flat(), error };
    if (part.length === 1) setAside(part[0] as T, error);
    else parts.unshift(...halves(part));
  }
  return { unwritten: [] };
}

function halves<T>(records: readonly T[]): T[][] {
  const half = Math.ceil(records.length / 2);
  return [records.slice(0, half), records.slice(half)];
}

/** The write's failure, or undefined when it was stored. */
async function appendOrError<T>(
  append: (records: readonly T[]) => Promise<void>,
  records: readonly T[],
): Promise<unknown> {
  try {
    await append(records);
    return undefined;
  } catch (error) {
    return error;
  }
}
