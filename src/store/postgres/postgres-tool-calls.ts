import type { Pool } from 'pg';
import type { StoredToolCall, ToolCallStore, ToolCallSummaryRow } from '../tool-call-contract.js';
import {
  TOOL_CALL_COLUMNS,
  toolCallFromRow,
  toolCallSummaryRow,
  toolCallSummarySql,
  toolCallValues,
} from '../tool-call-sql.js';
import { migrateUnderLock } from './migrate.js';

const schema = (table: string) => `
CREATE TABLE IF NOT EXISTS ${table} (
  time_ms BIGINT NOT NULL,
  call_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  caller TEXT NOT NULL,
  environment TEXT NOT NULL,
  server TEXT NOT NULL,
  tool TEXT NOT NULL,
  via TEXT NOT NULL,
  outcome TEXT NOT NULL,
  code TEXT,
  duration_ms BIGINT NOT NULL,
  bytes_in BIGINT NOT NULL,
  bytes_out BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS ${table}_time ON ${table} (time_ms);`;

/** The PostgreSQL type of each of TOOL_CALL_COLUMNS, in order (the `unnest` arrays of a batch INSERT). */
const PG_TYPES = [
  'bigint',
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'bigint',
  'bigint',
  'bigint',
] as const;

/**
 * MCP tool-call records in PostgreSQL (`DATABASE_URL`), beside the usage records: one table every instance writes
 * to, so `gateway usage tools` and the dashboard of any instance see every call. A batch is one INSERT of arrays.
 */
export class PostgresToolCallStore implements ToolCallStore {
  private readonly summary: string;

  private constructor(
    private readonly pool: Pool,
    private readonly table: string,
  ) {
    this.summary = toolCallSummarySql(table, (n) => `$${n}`);
  }

  /** The store on a small pool of its own (two connections: a batch write, a summary or a sweep step). */
  static async open(url: string, table = 'mcp_tool_calls'): Promise<PostgresToolCallStore> {
    if (!/^[a-z_][a-z0-9_]{0,50}$/.test(table)) throw new RangeError(`invalid table name ${table}`);
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on('error', () => {
      // An idle client lost its connection: the next query reconnects (and reports its own error).
    });
    await migrateUnderLock(pool, schema(table));
    return new PostgresToolCallStore(pool, table);
  }

  async appendToolCalls(records: readonly StoredToolCall[]): Promise<void> {
    if (records.length === 0) return;
    const columns: unknown[][] = TOOL_CALL_COLUMNS.map(() => []);
    for (const record of records) toolCallValues(record).forEach((value, c) => (columns[c] as unknown[]).push(value));
    const arrays = TOOL_CALL_COLUMNS.map((_, c) => `$${c + 1}::${PG_TYPES[c]}[]`).join(', ');
    await this.pool.query(
      `INSERT INTO ${this.table} (${TOOL_CALL_COLUMNS.join(', ')}) SELECT * FROM unnest(${arrays})`,
      columns,
    );
  }

  async summarizeToolCalls(fromMs: number, toMs: number, limit: number): Promise<ToolCallSummaryRow[]> {
    const { rows } = await this.pool.query<Record<string, unknown>>(this.summary, [
      fromMs,
      toMs,
      Math.max(0, Math.floor(limit)),
    ]);
    return rows.map(toolCallSummaryRow);
  }

  async recentToolCalls(limit: number): Promise<StoredToolCall[]> {
    const { rows } = await this.pool.query<Record<string, unknown>>(
      `SELECT ${TOOL_CALL_COLUMNS.join(', ')} FROM ${this.table} ORDER BY time_ms DESC, ctid DESC LIMIT $1`,
      [Math.max(0, Math.floor(limit))],
    );
    return rows.map(toolCallFromRow);
  }

  /** The oldest first, rows another instance's sweep holds skipped (`SKIP LOCKED`, as the usage retention's). */
  async purgeToolCalls(beforeMs: number, limit: number): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM ${this.table} WHERE ctid IN (
         SELECT ctid FROM ${this.table} WHERE time_ms < $1 ORDER BY time_ms LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [beforeMs, Math.max(0, Math.floor(limit))],
    );
    return rowCount ?? 0;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
