/**
 * The entry point of the embedded vector store's search thread (`vector-search-client.ts` starts it): a
 * connection of its own to the database file, with sqlite-vec loaded, that runs the read-only KNN and full-text
 * queries it is sent, one at a time, so that vec0's brute-force scan (~30 ms at 10,000 chunks of 1,536 dimensions,
 * ten times that at 100,000) never runs on the serving thread. In WAL mode a reader takes no lock a writer waits
 * for, and sees every transaction committed before its query started.
 *
 * It imports only Node's own modules and sqlite-vec's loader (and types): built it is plain JavaScript, and its
 * TypeScript source runs under Node's own type stripping, with no loader.
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';
import { getLoadablePath } from 'sqlite-vec';

export interface SearchThreadData {
  path: string;
  busyTimeoutMs: number;
}

export interface SearchRequest {
  id: number;
  sql: string;
  args: SQLInputValue[];
}

export type SearchReply = { id: number; rows: Record<string, unknown>[] } | { id: number; error: string };

/** The statements prepared so far, by text (a handful: one per vec0 table and filter shape). */
const MAX_STATEMENTS = 256;

function serve(port: NonNullable<typeof parentPort>, data: SearchThreadData): void {
  const db = new DatabaseSync(data.path, { timeout: data.busyTimeoutMs, allowExtension: true });
  db.loadExtension(getLoadablePath());
  db.enableLoadExtension(false);
  // Read-only by intent: a statement that would write is refused by SQLite itself.
  db.exec('PRAGMA query_only = ON');
  const statements = new Map<string, StatementSync>();
  port.on('message', (message: SearchRequest | 'close') => {
    if (message === 'close') {
      db.close();
      port.close();
      return;
    }
    let reply: SearchReply;
    try {
      let statement = statements.get(message.sql);
      if (!statement) {
        if (statements.size >= MAX_STATEMENTS) statements.clear();
        statement = db.prepare(message.sql);
        statements.set(message.sql, statement);
      }
      reply = { id: message.id, rows: statement.all(...message.args) as Record<string, unknown>[] };
    } catch (error) {
      reply = { id: message.id, error: error instanceof Error ? error.message : String(error) };
    }
    port.postMessage(reply);
  });
}

if (parentPort) serve(parentPort, workerData as SearchThreadData);
