import type * as Sqlite from './database.js';
import type { ConversationRead, ResponseStore, StoredConversationTurn, StoredUsage } from '../store-contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import { writeBatcherFor, type SqliteWriteBatcher } from './write-batcher.js';

/** Expired turns are deleted every PURGE_EVERY writes, at most PURGE_BATCH at a time. */
const PURGE_EVERY = 256;
const PURGE_BATCH = 1_000;
/** Candidates read per step of an eviction (deleted one by one until the caller fits). */
const EVICT_STEP = 32;
/** Evictions per write at most: a lowered bound is reached over several writes rather than in one long one. */
const MAX_EVICTIONS = 1_000;
/** Rows in groups of ROWS_PER_INSERT: one statement step for many turns (as the usage store does). */
const ROWS_PER_INSERT = 16;
/**
 * At most one write of stored responses per GATHER_MS. A commit (the WAL append) is what a small write costs: one
 * commit per GATHER_MS instead of one per event-loop turn brought the Responses route with storage closer to the
 * chat route's throughput (docs/benchmarks.md). The wait is paid only under load, when it buys throughput:
 * a write that carried several puts (calls overlap) makes the next GATHER_WRITES writes wait and gather; once
 * writes carry one put each for that long (one caller at a time), a put is written at once (the next turn).
 */
const GATHER_MS = 2;
const GATHER_WRITES = 16;

interface PendingPut {
  caller: string;
  id: string;
  turn: StoredConversationTurn;
  now: number;
  expires: number;
  maxCallerBytes: number;
  resolve: (evicted: number) => void;
  reject: (error: unknown) => void;
}

interface TurnRow {
  parent_id: string | null;
  depth: number;
  conversation_bytes: number;
  bytes: number;
  response: string;
  input_items: string;
  messages: string;
}

const TURN_COLUMNS = 't.parent_id, t.depth, t.conversation_bytes, t.bytes, x.response, x.input_items, x.messages';

/**
 * Stored Responses API responses in the embedded store (migration 13): one row per turn in `response_turns` (its
 * parent, depth, sizes and expiry) and its texts in `response_turn_texts`, so keeping earlier turns alive touches
 * only small rows. A conversation is read with one recursive query. Each caller's total is kept in
 * `response_callers` (a write adds its turns, the trigger of a deleted turn takes it off), so a write knows in one
 * statement whether it must evict. The puts of one event-loop turn within
 * GATHER_MS are written together (one write of the database's group-commit batcher), each put resolving once
 * that write committed.
 */
export class SqliteResponseStore implements ResponseStore {
  private pending: PendingPut[] = [];
  /** How many more writes wait to gather puts (reset to GATHER_WRITES by a write that carried several). */
  private gatherFor = 0;
  private readonly statements: ReturnType<typeof prepare>;
  private readonly batcher: SqliteWriteBatcher;
  private writes = 0;

  constructor(db: Sqlite.Database) {
    this.statements = prepare(db);
    this.batcher = writeBatcherFor(db);
  }

  async put(
    caller: string,
    id: string,
    turn: StoredConversationTurn,
    bounds: { ttlMs: number; maxCallerBytes: number },
    nowMs = Date.now(),
  ): Promise<number> {
    const now = wholeMs('nowMs', nowMs);
    const expires = now + durationMs('ttlMs', bounds.ttlMs);
    if (this.pending.length === 0) {
      if (this.gatherFor > 0) setTimeout(() => this.flush(now), GATHER_MS);
      else setImmediate(() => this.flush(now));
    }
    return new Promise<number>((resolve, reject) =>
      this.pending.push({ caller, id, turn, now, expires, maxCallerBytes: bounds.maxCallerBytes, resolve, reject }),
    );
  }

  /** One batcher write for every put since the last one. */
  private flush(now: number): void {
    let batch: PendingPut[] = [];
    let evicted: number[] = [];
    this.batcher
      .run(() => {
        batch = this.pending;
        this.pending = [];
        this.gatherFor = batch.length > 1 ? GATHER_WRITES : Math.max(0, this.gatherFor - 1);
        evicted = this.write(batch);
        this.writes += batch.length;
        if (this.writes >= PURGE_EVERY) {
          this.writes = 0;
          this.statements.purge.run(now, PURGE_BATCH);
        }
      })
      .then(
        () => batch.forEach((put, i) => put.resolve(evicted[i] ?? 0)),
        (error: unknown) => {
          for (const put of batch) put.reject(error);
        },
      );
  }

  /**
   * Writes the turns (multi-row INSERTs; an id written again replaces its turn), keeps each one's earlier turns
   * alive as long as it, adds them to their callers' totals and evicts while a caller is over its bound. Returns
   * the evictions per put (counted on the last put of each caller).
   */
  private write(pending: readonly PendingPut[]): number[] {
    const s = this.statements;
    // The same id twice in one batch: the later put replaces the earlier, as two batches would.
    const last = new Map(pending.map((put) => [keyOf(put.caller, put.id), put]));
    const batch = pending.filter((put) => last.get(keyOf(put.caller, put.id)) === put);
    // Each turn's number keys its texts: appended, with no index of their own to update.
    const rowids = new Map<string, number>();
    inGroups(batch, (group, many) => {
      for (const row of (many ? s.insertTurns : s.insertTurn).all(...group.flatMap(turnRow)))
        rowids.set(keyOf(row.caller, row.id), row.turn);
    });
    for (const put of batch) {
      const key = keyOf(put.caller, put.id);
      if (rowids.has(key)) continue;
      s.remove.run(put.caller, put.id); // an id already held: its trigger takes the old texts and bytes with it
      for (const row of s.insertTurn.all(...turnRow(put))) rowids.set(key, row.turn);
    }
    const textsRow = (put: PendingPut) => [
      rowids.get(keyOf(put.caller, put.id)),
      put.turn.response,
      put.turn.inputItems,
      put.turn.messages,
    ];
    inGroups(batch, (group, many) => (many ? s.insertTexts : s.insertText).run(...group.flatMap(textsRow)));
    for (const { caller, turn, expires } of batch) {
      if (turn.parentId !== undefined) s.keepAncestors.run(turn.parentId, caller, turn.depth, expires, caller, expires);
    }
    const evicted = this.account(batch);
    return pending.map((put) => evicted.get(put) ?? 0);
  }

  /** Adds the batch to its callers' totals (one statement per caller), evicting while one is over its bound. */
  private account(batch: readonly PendingPut[]): Map<PendingPut, number> {
    const s = this.statements;
    const evicted = new Map<PendingPut, number>();
    const byCaller = new Map<string, { bytes: number; turns: number; oldest: number; last: PendingPut }>();
    for (const put of batch) {
      const entry = byCaller.get(put.caller) ?? { bytes: 0, turns: 0, oldest: put.expires, last: put };
      byCaller.set(put.caller, {
        bytes: entry.bytes + put.turn.bytes,
        turns: entry.turns + 1,
        oldest: Math.min(entry.oldest, put.expires),
        last: put,
      });
    }
    for (const [caller, added] of byCaller) {
      const { maxCallerBytes, now } = added.last;
      let total = s.addToCaller.get(caller, added.turns, added.bytes)?.bytes ?? 0;
      let count = 0;
      // Only turns this batch did not just touch: the chains it wrote have the latest expiry of all.
      for (let step = 0; total > maxCallerBytes && step < MAX_EVICTIONS;) {
        const victims = s.evictionCandidates.all(caller, added.oldest, EVICT_STEP);
        if (victims.length === 0) break;
        for (const victim of victims) {
          total -= s.evict.get(caller, victim.id)?.bytes ?? 0;
          step++;
          if (victim.expires_ms > now) count++; // expired ones were not kept anyway
          if (total <= maxCallerBytes) break;
        }
      }
      evicted.set(added.last, count);
    }
    return evicted;
  }

  async get(caller: string, id: string, nowMs = Date.now()): Promise<StoredConversationTurn | undefined> {
    const row = this.statements.select.get(caller, id, wholeMs('nowMs', nowMs));
    return row ? turnOf(row) : undefined;
  }

  async conversation(
    caller: string,
    id: string,
    bounds: { maxTurns: number; maxBytes: number },
    nowMs = Date.now(),
  ): Promise<ConversationRead | undefined> {
    const now = wholeMs('nowMs', nowMs);
    const head = this.statements.head.get(caller, id, now);
    if (!head) return undefined;
    const place = { depth: head.depth, conversationBytes: head.conversation_bytes };
    if (head.depth > bounds.maxTurns || head.conversation_bytes > bounds.maxBytes)
      return { head: place, turns: undefined };
    const rows = this.statements.chain.all(id, caller, now, bounds.maxTurns, caller, now);
    return { head: place, turns: rows.map(turnOf) };
  }

  async delete(caller: string, id: string, nowMs = Date.now()): Promise<boolean> {
    const now = wholeMs('nowMs', nowMs);
    const result = await this.batcher.run(() => this.statements.removeLive.run(caller, id, now));
    return Number(result.changes) > 0;
  }

  async usage(caller: string): Promise<StoredUsage> {
    const row = this.statements.callerUsage.get(caller);
    return { turns: row?.turns ?? 0, bytes: row?.bytes ?? 0 };
  }
}

function turnOf(row: TurnRow): StoredConversationTurn {
  return {
    response: row.response,
    inputItems: row.input_items,
    messages: row.messages,
    parentId: row.parent_id ?? undefined,
    depth: row.depth,
    conversationBytes: row.conversation_bytes,
    bytes: row.bytes,
  };
}

function keyOf(caller: string, id: string): string {
  return `${caller.length}:${caller}:${id}`;
}

function turnRow(put: PendingPut): unknown[] {
  const { turn } = put;
  return [put.caller, put.id, turn.parentId ?? null, turn.depth, turn.conversationBytes, turn.bytes, put.expires];
}

/** Calls `write` with groups of ROWS_PER_INSERT puts (`many`), then one put at a time for the rest. */
function inGroups(batch: readonly PendingPut[], write: (group: readonly PendingPut[], many: boolean) => void): void {
  let i = 0;
  for (; i + ROWS_PER_INSERT <= batch.length; i += ROWS_PER_INSERT) write(batch.slice(i, i + ROWS_PER_INSERT), true);
  for (; i < batch.length; i++) write(batch.slice(i, i + 1), false);
}

const values = (columns: number, rows: number) =>
  Array.from({ length: rows }, () => `(${Array.from({ length: columns }, () => '?').join(', ')})`).join(', ');
const INSERT_TURNS =
  'INSERT INTO response_turns (caller, id, parent_id, depth, conversation_bytes, bytes, expires_ms) VALUES ';
const INSERT_TEXTS = 'INSERT OR REPLACE INTO response_turn_texts (turn, response, input_items, messages) VALUES ';

function prepare(db: Sqlite.Database) {
  return {
    // An id already held is left alone here (not returned): the caller of these replaces it.
    insertTurn: db.prepare<unknown[], { turn: number; caller: string; id: string }>(
      `${INSERT_TURNS}${values(7, 1)} ON CONFLICT DO NOTHING RETURNING turn, caller, id`,
    ),
    insertTurns: db.prepare<unknown[], { turn: number; caller: string; id: string }>(
      `${INSERT_TURNS}${values(7, ROWS_PER_INSERT)} ON CONFLICT DO NOTHING RETURNING turn, caller, id`,
    ),
    insertText: db.prepare<unknown[]>(INSERT_TEXTS + values(4, 1)),
    insertTexts: db.prepare<unknown[]>(INSERT_TEXTS + values(4, ROWS_PER_INSERT)),
    // The trigger response_turn_removed takes the texts and the caller's total with it.
    remove: db.prepare<[string, string]>('DELETE FROM response_turns WHERE caller = ? AND id = ?'),
    evict: db.prepare<[string, string], { bytes: number }>(
      'DELETE FROM response_turns WHERE caller = ? AND id = ? RETURNING bytes',
    ),
    removeLive: db.prepare<[string, string, number]>(
      'DELETE FROM response_turns WHERE caller = ? AND id = ? AND expires_ms > ?',
    ),
    purge: db.prepare<[number, number]>(
      'DELETE FROM response_turns WHERE turn IN (SELECT turn FROM response_turns WHERE expires_ms <= ? LIMIT ?)',
    ),
    addToCaller: db.prepare<[string, number, number], { bytes: number }>(
      `INSERT INTO response_callers (caller, turns, bytes) VALUES (?, ?, ?)
       ON CONFLICT (caller) DO UPDATE SET turns = turns + excluded.turns, bytes = bytes + excluded.bytes RETURNING bytes`,
    ),
    // Its earlier turns (at most depth - 1 of them) expire no sooner than the turn that continues them.
    keepAncestors: db.prepare<[string, string, number, number, string, number]>(
      `WITH RECURSIVE up(id, n) AS (
         SELECT ?, 1
         UNION ALL
         SELECT t.parent_id, up.n + 1 FROM up JOIN response_turns t ON t.caller = ?2 AND t.id = up.id
         WHERE t.parent_id IS NOT NULL AND up.n < ?3
       )
       UPDATE response_turns SET expires_ms = ?4 WHERE caller = ?5 AND id IN (SELECT id FROM up) AND expires_ms < ?6`,
    ),
    callerUsage: db.prepare<[string], { turns: number; bytes: number }>(
      'SELECT turns, bytes FROM response_callers WHERE caller = ?',
    ),
    // Least recently continued first (expired ones before all), and a later turn before the turn it continues.
    evictionCandidates: db.prepare<[string, number, number], { id: string; expires_ms: number }>(
      'SELECT id, expires_ms FROM response_turns WHERE caller = ? AND expires_ms < ? ORDER BY expires_ms, depth DESC LIMIT ?',
    ),
    select: db.prepare<[string, string, number], TurnRow>(
      `SELECT ${TURN_COLUMNS} FROM response_turns t JOIN response_turn_texts x ON x.turn = t.turn
       WHERE t.caller = ? AND t.id = ? AND t.expires_ms > ?`,
    ),
    head: db.prepare<[string, string, number], { depth: number; conversation_bytes: number }>(
      'SELECT depth, conversation_bytes FROM response_turns WHERE caller = ? AND id = ? AND expires_ms > ?',
    ),
    // The chain from `id` up: live turns only, at most maxTurns; it stops at a turn that is gone.
    chain: db.prepare<[string, string, number, number, string, number], TurnRow>(
      `WITH RECURSIVE up(id, n) AS (
         SELECT ?, 0
         UNION ALL
         SELECT t.parent_id, up.n + 1 FROM up JOIN response_turns t ON t.caller = ?2 AND t.id = up.id AND t.expires_ms > ?3
         WHERE t.parent_id IS NOT NULL AND up.n + 1 < ?4
       )
       SELECT ${TURN_COLUMNS} FROM up
       JOIN response_turns t ON t.caller = ?5 AND t.id = up.id AND t.expires_ms > ?6
       JOIN response_turn_texts x ON x.turn = t.turn
       ORDER BY up.n DESC`,
    ),
  };
}
