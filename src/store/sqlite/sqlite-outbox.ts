import type * as Sqlite from './database.js';
import type { OutboxDelivery, OutboxStore } from '../store-contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import { writeBatcherFor, type SqliteWriteBatcher } from './write-batcher.js';

interface Row {
  id: string;
  event_id: string;
  subscription: string;
  body: string;
  state: OutboxDelivery['state'];
  attempts: number;
  created_ms: number;
  next_attempt_ms: number;
  last_error: string | null;
}

const DELIVERED_KEPT_MS = 24 * 3600 * 1000;
/** New events wait at most this long (or for this many) before their commit: one commit for a burst of events. */
const ENQUEUE_WINDOW_MS = 5;
const ENQUEUE_BATCH = 512;

type NewDelivery = Pick<OutboxDelivery, 'id' | 'eventId' | 'subscription' | 'body'>;
interface Waiting {
  deliveries: ReadonlyArray<NewDelivery>;
  now: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}
const COLUMNS = 'id, event_id, subscription, body, state, attempts, created_ms, next_attempt_ms, last_error';

/**
 * The webhook outbox in the embedded store (table `webhook_outbox`, migration 5). Writes go through the group
 * commit of the other embedded stores, so an event is durable (WAL) once `enqueue` resolved. `claim` is one
 * UPDATE ... RETURNING: atomic across the processes sharing the file. Delivered rows are kept a day, then purged.
 */
export class SqliteOutbox implements OutboxStore {
  private readonly batcher: SqliteWriteBatcher;
  private readonly insert: Sqlite.Statement<[string, string, string, string, number, number]>;
  private readonly claimDue: Sqlite.Statement<[number, string, number, number], Row>;
  private readonly markDelivered: Sqlite.Statement<[number, number, string]>;
  private readonly markRetry: Sqlite.Statement<[number, number, string, string]>;
  private readonly markDead: Sqlite.Statement<[number, string, number, string]>;
  private readonly purgeDelivered: Sqlite.Statement<[number]>;
  private readonly selectDead: Sqlite.Statement<[number], Row>;
  private readonly revive: Sqlite.Statement<[number, string]>;
  private readonly selectOne: Sqlite.Statement<[string], Row>;
  private readonly anyDue: Sqlite.Statement<[string, number], number>;
  private readonly pendingCount: Sqlite.Statement<[string], number>;
  private deliveredSincePurge = 0;
  private waiting: Waiting[] = [];
  private waitingCount = 0;
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(db: Sqlite.Database) {
    this.batcher = writeBatcherFor(db);
    this.insert = db.prepare(
      `INSERT INTO webhook_outbox (id, event_id, subscription, body, state, attempts, created_ms, next_attempt_ms)
       VALUES (?, ?, ?, ?, 'pending', 0, ?, ?) ON CONFLICT (id) DO NOTHING`,
    );
    this.claimDue = db.prepare<[number, string, number, number], Row>(
      `UPDATE webhook_outbox SET next_attempt_ms = ?
       WHERE id IN (SELECT id FROM webhook_outbox
                    WHERE subscription = ? AND state = 'pending' AND next_attempt_ms <= ?
                    ORDER BY next_attempt_ms LIMIT ?)
       RETURNING ${COLUMNS}`,
    );
    this.markDelivered = db.prepare(
      `UPDATE webhook_outbox SET state = 'delivered', attempts = attempts + 1, finished_ms = ?, next_attempt_ms = ?, last_error = NULL WHERE id = ?`,
    );
    this.markRetry = db.prepare(
      `UPDATE webhook_outbox SET attempts = ?, next_attempt_ms = ?, last_error = ? WHERE id = ? AND state = 'pending'`,
    );
    this.markDead = db.prepare(
      `UPDATE webhook_outbox SET state = 'dead', attempts = ?, last_error = ?, finished_ms = ? WHERE id = ? AND state = 'pending'`,
    );
    this.purgeDelivered = db.prepare(`DELETE FROM webhook_outbox WHERE state = 'delivered' AND finished_ms < ?`);
    this.selectDead = db.prepare<[number], Row>(
      `SELECT ${COLUMNS} FROM webhook_outbox WHERE state = 'dead' ORDER BY finished_ms, id LIMIT ?`,
    );
    this.revive = db.prepare(
      `UPDATE webhook_outbox SET state = 'pending', attempts = 0, next_attempt_ms = ?, finished_ms = NULL WHERE id = ? AND state = 'dead'`,
    );
    this.selectOne = db.prepare<[string], Row>(`SELECT ${COLUMNS} FROM webhook_outbox WHERE id = ?`);
    this.pendingCount = db
      .prepare<[string], number>(`SELECT COUNT(*) FROM webhook_outbox WHERE subscription = ? AND state = 'pending'`)
      .pluck();
    this.anyDue = db
      .prepare<[string, number], number>(
        `SELECT EXISTS (SELECT 1 FROM webhook_outbox WHERE subscription = ? AND state = 'pending' AND next_attempt_ms <= ?)`,
      )
      .pluck();
  }

  /**
   * Resolves once the deliveries are committed. Events arriving together share one commit: they wait up to
   * 5 ms (or 512 deliveries) for each other — a commit per event cost a large share of the gateway's CPU under
   * load, one per burst a fraction of that.
   */
  enqueue(deliveries: ReadonlyArray<NewDelivery>, nowMs?: number): Promise<void> {
    if (deliveries.length === 0) return Promise.resolve();
    const now = wholeMs('nowMs', nowMs ?? Date.now());
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ deliveries, now, resolve, reject });
      this.waitingCount += deliveries.length;
      if (this.waitingCount >= ENQUEUE_BATCH) this.flush();
      else this.flushTimer ??= setTimeout(() => this.flush(), ENQUEUE_WINDOW_MS);
    });
  }

  private flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const batch = this.waiting;
    this.waiting = [];
    this.waitingCount = 0;
    this.batcher
      .run(() => {
        for (const w of batch)
          for (const d of w.deliveries) this.insert.run(d.id, d.eventId, d.subscription, d.body, w.now, w.now);
      })
      .then(
        () => batch.forEach((w) => w.resolve()),
        (error: unknown) => batch.forEach((w) => w.reject(error)),
      );
  }

  async claim(subscription: string, limit: number, leaseMs: number, nowMs?: number): Promise<OutboxDelivery[]> {
    const now = wholeMs('nowMs', nowMs ?? Date.now());
    const lease = durationMs('leaseMs', leaseMs);
    if (limit <= 0) return [];
    // A read first (WAL: no lock): most looks find nothing due, and then cost no write transaction.
    if (this.anyDue.get(subscription, now) !== 1) return [];
    const rows = await this.batcher.run(() => this.claimDue.all(now + lease, subscription, now, Math.floor(limit)));
    // RETURNING shows the new lease; the caller wants when it was due, which only ordering needs: keep the lease.
    return rows.map(toDelivery).sort((a, b) => a.createdMs - b.createdMs || a.id.localeCompare(b.id));
  }

  async delivered(id: string, nowMs?: number): Promise<void> {
    const now = wholeMs('nowMs', nowMs ?? Date.now());
    const purge = ++this.deliveredSincePurge >= 1_000;
    if (purge) this.deliveredSincePurge = 0;
    await this.batcher.run(() => {
      this.markDelivered.run(now, now, id);
      if (purge) this.purgeDelivered.run(now - DELIVERED_KEPT_MS);
    });
  }

  async retryLater(id: string, attempts: number, nextAttemptMs: number, error: string): Promise<void> {
    const next = wholeMs('nextAttemptMs', nextAttemptMs);
    await this.batcher.run(() => this.markRetry.run(attempts, next, error, id));
  }

  async deadLetter(id: string, attempts: number, error: string, nowMs?: number): Promise<void> {
    const now = wholeMs('nowMs', nowMs ?? Date.now());
    await this.batcher.run(() => this.markDead.run(attempts, error, now, id));
  }

  async listDead(limit: number): Promise<OutboxDelivery[]> {
    return this.selectDead.all(Math.max(0, Math.floor(limit))).map(toDelivery);
  }

  async redeliver(ids: readonly string[], nowMs?: number): Promise<number> {
    const now = wholeMs('nowMs', nowMs ?? Date.now());
    return this.batcher.run(() => ids.reduce((n, id) => n + this.revive.run(now, id).changes, 0));
  }

  async backlog(subscription: string): Promise<number> {
    return this.pendingCount.get(subscription) ?? 0;
  }

  async get(id: string): Promise<OutboxDelivery | undefined> {
    const row = this.selectOne.get(id);
    return row ? toDelivery(row) : undefined;
  }
}

function toDelivery(row: Row): OutboxDelivery {
  return {
    id: row.id,
    eventId: row.event_id,
    subscription: row.subscription,
    body: row.body,
    state: row.state,
    attempts: row.attempts,
    createdMs: row.created_ms,
    nextAttemptMs: row.next_attempt_ms,
    ...(row.last_error !== null ? { lastError: row.last_error } : {}),
  };
}
