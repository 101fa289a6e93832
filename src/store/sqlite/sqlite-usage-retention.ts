import type * as Sqlite from './database.js';
import type { UsageFootprint } from '../store-contract.js';
import { LATENCY_BIN_SQL } from '../usage-sql.js';
import {
  HOUR_KEY,
  HOUR_MS,
  LATENCY_ROW_BYTES,
  foldedRecordsSql,
  hourBytesSql,
  recordBytesSql,
  rollLatencySql,
  rollUpSql,
} from '../usage-rollup-sql.js';

type Stats = { n: number; b: number };

/**
 * What ages usage records out of the embedded store (migration 23): the roll of the oldest records into their
 * hours (`usage_hours`, `usage_hour_latency`), deletes by age, and the rows and bytes `usage_size` keeps. Each call is one `BEGIN IMMEDIATE`
 * transaction of its own that also updates `usage_size`, so a crash leaves the records, the hours and the counts
 * as they were before it or after it, never in between.
 */
export class SqliteUsageRetention {
  readonly roll: Sqlite.Transaction<(limit: number) => number>;
  readonly purge: Sqlite.Transaction<(beforeMs: number, limit: number) => number>;
  readonly purgeHours: Sqlite.Transaction<(beforeMs: number, limit: number) => number>;
  private readonly size: Sqlite.Statement<[], Record<string, unknown>>;
  private readonly maxRowid: Sqlite.Statement<[], { seq: number | null }>;
  private readonly countAdded: Sqlite.Statement<[number]>;

  constructor(db: Sqlite.Database) {
    const recordBytes = recordBytesSql('sqlite');
    const hourBytes = hourBytesSql('sqlite');
    const move = db.prepare<[number, number, number, number]>(
      `UPDATE usage_size SET records = records - ?, record_bytes = record_bytes - ?, hours = hours + ?,
         hour_bytes = hour_bytes + ? WHERE id = 1`,
    );

    // The oldest records by arrival, through the time index (its entries end with the rowid: already in order).
    const oldest = 'rowid IN (SELECT rowid FROM usage_records ORDER BY time_ms, rowid LIMIT ?1)';
    const oldestStats = db.prepare<[number], Stats>(
      `SELECT count(*) AS n, coalesce(sum(${recordBytes}), 0) AS b FROM usage_records WHERE ${oldest}`,
    );
    const matches = HOUR_KEY.map((c) => `h.${c} = g.${c}`).join(' AND ');
    // The records with the model each is rolled up under (past 64 models an hour and caller: `(other)`).
    const folded = `WITH ${foldedRecordsSql('usage_hours', 'usage_records', oldest)}`;
    const newHours = db.prepare<[number], Stats>(
      `${folded} SELECT count(*) AS n, coalesce(sum(${hourBytes}), 0) AS b FROM (
         SELECT DISTINCT (time_ms / ${HOUR_MS}) * ${HOUR_MS} AS hour_ms, caller, environment, route,
           coalesce(model, '') AS model, coalesce(upstream, '') AS upstream
         FROM rolled_records) AS g
       WHERE NOT EXISTS (SELECT 1 FROM usage_hours AS h WHERE ${matches})`,
    );
    const newBins = db.prepare<[number], Stats>(
      `SELECT count(*) AS n, count(*) * ${LATENCY_ROW_BYTES.sqlite} AS b FROM (
         SELECT DISTINCT (time_ms / ${HOUR_MS}) * ${HOUR_MS} AS hour_ms, ${LATENCY_BIN_SQL} AS bin
         FROM usage_records WHERE ${oldest}) AS g
       WHERE NOT EXISTS (SELECT 1 FROM usage_hour_latency AS h WHERE h.hour_ms = g.hour_ms AND h.bin = g.bin)`,
    );
    const rollUp = db.prepare<[number]>(`${folded} ${rollUpSql('usage_hours', 'rolled_records', 'true')}`);
    const rollLatency = db.prepare<[number]>(rollLatencySql('usage_hour_latency', 'usage_records', oldest));
    const deleteOldest = db.prepare<[number]>(`DELETE FROM usage_records WHERE ${oldest}`);
    this.roll = db.transaction((limit: number) => {
      const gone = oldestStats.get(limit) as Stats;
      if (gone.n === 0) return 0;
      const hours = newHours.get(limit) as Stats;
      const bins = newBins.get(limit) as Stats;
      rollUp.run(limit);
      rollLatency.run(limit);
      deleteOldest.run(limit);
      move.run(gone.n, gone.b, hours.n + bins.n, hours.b + bins.b);
      return gone.n;
    });

    const old = 'rowid IN (SELECT rowid FROM usage_records WHERE time_ms < ?1 ORDER BY time_ms, rowid LIMIT ?2)';
    const oldStats = db.prepare<[number, number], Stats>(
      `SELECT count(*) AS n, coalesce(sum(${recordBytes}), 0) AS b FROM usage_records WHERE ${old}`,
    );
    const deleteOld = db.prepare<[number, number]>(`DELETE FROM usage_records WHERE ${old}`);
    this.purge = db.transaction((beforeMs: number, limit: number) => {
      const gone = oldStats.get(beforeMs, limit) as Stats;
      if (gone.n === 0) return 0;
      deleteOld.run(beforeMs, limit);
      move.run(gone.n, gone.b, 0, 0);
      return gone.n;
    });

    // Rollup rows of hours that ended by ?1: at most ?2 of each table, the oldest first.
    const ended = `rowid IN (SELECT rowid FROM usage_hours WHERE hour_ms <= ?1 - ${HOUR_MS} ORDER BY hour_ms LIMIT ?2)`;
    const endedStats = db.prepare<[number, number], Stats>(
      `SELECT count(*) AS n, coalesce(sum(${hourBytes}), 0) AS b FROM usage_hours WHERE ${ended}`,
    );
    const deleteEnded = db.prepare<[number, number]>(`DELETE FROM usage_hours WHERE ${ended}`);
    const endedBins = `(hour_ms, bin) IN (SELECT hour_ms, bin FROM usage_hour_latency WHERE hour_ms <= ?1 - ${HOUR_MS}
      ORDER BY hour_ms LIMIT ?2)`;
    const endedBinsCount = db.prepare<[number, number], { n: number }>(
      `SELECT count(*) AS n FROM usage_hour_latency WHERE ${endedBins}`,
    );
    const deleteEndedBins = db.prepare<[number, number]>(`DELETE FROM usage_hour_latency WHERE ${endedBins}`);
    this.purgeHours = db.transaction((beforeMs: number, limit: number) => {
      const gone = endedStats.get(beforeMs, limit) as Stats;
      const bins = (endedBinsCount.get(beforeMs, limit) as { n: number }).n;
      if (gone.n + bins === 0) return 0;
      deleteEnded.run(beforeMs, limit);
      deleteEndedBins.run(beforeMs, limit);
      move.run(0, 0, -(gone.n + bins), -(gone.b + bins * LATENCY_ROW_BYTES.sqlite));
      return gone.n + bins;
    });

    this.size = db.prepare('SELECT records, record_bytes, hours, hour_bytes FROM usage_size WHERE id = 1');
    this.maxRowid = db.prepare('SELECT max(rowid) AS seq FROM usage_records');
    this.countAdded = db.prepare<[number]>(
      `UPDATE usage_size SET (records, record_bytes) = (SELECT usage_size.records + count(*),
         usage_size.record_bytes + coalesce(sum(${recordBytes}), 0) FROM usage_records WHERE rowid > ?) WHERE id = 1`,
    );
  }

  /** Inside the transaction of an insert, before its rows: where they will start. */
  lastRowid(): number {
    return this.maxRowid.get()?.seq ?? 0;
  }

  /** Inside the same transaction, after its rows: counts the rows stored after `lastRowid` (new rowids only grow). */
  counted(lastRowid: number): void {
    this.countAdded.run(lastRowid);
  }

  footprint(): UsageFootprint {
    const row = this.size.get() ?? {};
    return {
      records: Number(row.records ?? 0),
      recordBytes: Number(row.record_bytes ?? 0),
      hours: Number(row.hours ?? 0),
      hourBytes: Number(row.hour_bytes ?? 0),
    };
  }
}
