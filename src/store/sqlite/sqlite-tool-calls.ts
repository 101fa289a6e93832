import { setImmediate as nextTurn } from 'node:timers/promises';
import type * as Sqlite from './database.js';
import type { StoredToolCall, ToolCallStore, ToolCallSummaryRow } from '../tool-call-contract.js';
import {
  TOOL_CALL_COLUMNS,
  toolCallFromRow,
  toolCallSummaryRow,
  toolCallSummarySql,
  toolCallValues,
} from '../tool-call-sql.js';

/** MCP tool-call records in the embedded store (table `mcp_tool_calls`, migration 29). */
export class SqliteToolCallStore implements ToolCallStore {
  private readonly write: Sqlite.Transaction<(records: readonly StoredToolCall[]) => void>;
  private readonly summary: Sqlite.Statement<[number, number, number], Record<string, unknown>>;
  private readonly latest: Sqlite.Statement<[number], Record<string, unknown>>;
  private readonly purge: Sqlite.Statement<[number, number]>;

  constructor(db: Sqlite.Database) {
    const insert = db.prepare(
      `INSERT INTO mcp_tool_calls (${TOOL_CALL_COLUMNS.join(', ')}) VALUES (${TOOL_CALL_COLUMNS.map(() => '?').join(', ')})`,
    );
    this.write = db.transaction((records: readonly StoredToolCall[]) => {
      for (const record of records) insert.run(...toolCallValues(record));
    });
    this.summary = db.prepare(toolCallSummarySql('mcp_tool_calls', (n) => `?${n}`));
    this.latest = db.prepare(
      `SELECT ${TOOL_CALL_COLUMNS.join(', ')} FROM mcp_tool_calls ORDER BY time_ms DESC, rowid DESC LIMIT ?`,
    );
    this.purge = db.prepare(
      'DELETE FROM mcp_tool_calls WHERE rowid IN (SELECT rowid FROM mcp_tool_calls WHERE time_ms < ? ORDER BY time_ms LIMIT ?)',
    );
  }

  /** One immediate transaction on a later turn of the event loop (like the usage records' writes). */
  async appendToolCalls(records: readonly StoredToolCall[]): Promise<void> {
    if (records.length === 0) return;
    await nextTurn();
    this.write.immediate(records);
  }

  async summarizeToolCalls(fromMs: number, toMs: number, limit: number): Promise<ToolCallSummaryRow[]> {
    return this.summary.all(fromMs, toMs, Math.max(0, Math.floor(limit))).map(toolCallSummaryRow);
  }

  async recentToolCalls(limit: number): Promise<StoredToolCall[]> {
    return this.latest.all(Math.max(0, Math.floor(limit))).map(toolCallFromRow);
  }

  async purgeToolCalls(beforeMs: number, limit: number): Promise<number> {
    await nextTurn();
    return this.purge.run(beforeMs, Math.max(0, Math.floor(limit))).changes;
  }
}
