import type { UsageRecord, UsageStore } from '../store/contract.js';
import { UsageRowsRefused, recordRows } from '../store/usage-sql.js';

export interface RefusedRecords {
  /** Records not written because the store then failed otherwise (down, busy): kept for the next batch. */
  unwritten: UsageRecord[];
  /** That other failure, when there was one. */
  error?: unknown;
}

/**
 * Writes `records`, which the store refused as one write (`refused`) because of some value in them, all but the
 * refused ones: the records are halved and each half written, a refused half halved again, until each refused
 * record stands alone and is handed to `setAside` (k refused records among n cost about 2k·log2(n/k) writes: 18
 * for one in a batch of 500). A record never blocks the others, and is never retried: the database would refuse
 * it again. If the store fails otherwise meanwhile (down, busy), what is not written yet is given back.
 */
export async function writeAroundRefused(
  store: UsageStore,
  records: readonly UsageRecord[],
  refused: UsageRowsRefused,
  setAside: (record: UsageRecord, error: UsageRowsRefused) => void,
): Promise<RefusedRecords> {
  if (records.length === 1) {
    setAside(records[0] as UsageRecord, refused);
    return { unwritten: [] };
  }
  const parts = halves(records);
  for (let part = parts.shift(); part !== undefined; part = parts.shift()) {
    const error = await appendOrError(store, part);
    if (error === undefined) continue;
    if (!(error instanceof UsageRowsRefused)) return { unwritten: [part, ...parts].flat(), error };
    if (part.length === 1) setAside(part[0] as UsageRecord, error);
    else parts.unshift(...halves(part));
  }
  return { unwritten: [] };
}

function halves(records: readonly UsageRecord[]): UsageRecord[][] {
  const half = Math.ceil(records.length / 2);
  return [records.slice(0, half), records.slice(half)];
}

/** The write's failure, or undefined when it was stored. */
async function appendOrError(store: UsageStore, records: readonly UsageRecord[]): Promise<unknown> {
  try {
    await store.appendRows([recordRows(records)]);
    return undefined;
  } catch (error) {
    return error;
  }
}
