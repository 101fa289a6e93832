import { STORAGE_USE_SQL } from './storage-use-migration.js';
import { USAGE_HOURS_MIGRATION } from './usage-hours-migration.js';
import { VECTOR_STORES_MIGRATION } from './vector-migration.js';
import { VECTOR_STORAGE_USE_SQL } from './vector-storage-use-migration.js';

/**
 * Forward-only schema migrations of the embedded store, applied in order inside one immediate transaction each.
 * A migration is never edited after it has shipped: add a new one.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'gateway_meta',
    sql: `CREATE TABLE gateway_meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            updated_at TEXT NOT NULL
          ) STRICT;`,
  },
  {
    version: 2,
    name: 'rate_limits',
    // GCRA keeps one "theoretical arrival time" per key; leases are one row per request in flight.
    sql: `CREATE TABLE rate_limits (
            key TEXT PRIMARY KEY,
            tat_ms INTEGER NOT NULL,
            expires_ms INTEGER NOT NULL
          ) STRICT;
          CREATE INDEX rate_limits_expiry ON rate_limits (expires_ms);
          CREATE TABLE concurrency_leases (
            key TEXT NOT NULL,
            token TEXT NOT NULL,
            expires_ms INTEGER NOT NULL,
            PRIMARY KEY (key, token)
          ) STRICT;`,
  },
  {
    version: 3,
    name: 'idempotency_keys',
    sql: `CREATE TABLE idempotency_keys (
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
            lease_expires_ms INTEGER NOT NULL,
            response TEXT,
            expires_ms INTEGER NOT NULL,
            PRIMARY KEY (scope, key)
          ) STRICT;
          CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_ms);`,
  },
  {
    version: 4,
    name: 'upstream_pauses',
    sql: `CREATE TABLE upstream_pauses (
            scope TEXT PRIMARY KEY,
            until_ms INTEGER NOT NULL
          ) STRICT;`,
  },
  {
    version: 5,
    name: 'webhook_outbox',
    // One row per (event, subscription). `next_attempt_ms` doubles as the claim lease: a claimed row is pushed
    // into the future, so it is due again only if its dispatcher never reported back. Partial indexes: writing a
    // new (pending) event touches only the due index, not every index of the table.
    sql: `CREATE TABLE webhook_outbox (
            id TEXT PRIMARY KEY,
            event_id TEXT NOT NULL,
            subscription TEXT NOT NULL,
            body TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
            attempts INTEGER NOT NULL,
            created_ms INTEGER NOT NULL,
            next_attempt_ms INTEGER NOT NULL,
            last_error TEXT,
            finished_ms INTEGER
          ) STRICT;
          CREATE INDEX webhook_outbox_due ON webhook_outbox (subscription, next_attempt_ms) WHERE state = 'pending';
          CREATE INDEX webhook_outbox_dead ON webhook_outbox (finished_ms) WHERE state = 'dead';
          CREATE INDEX webhook_outbox_delivered ON webhook_outbox (finished_ms) WHERE state = 'delivered';`,
  },
  {
    version: 6,
    name: 'api_keys',
    // One JSON document per key (rights, limits, budget change rarely and are read whole).
    sql: `CREATE TABLE api_keys (
            key_id TEXT PRIMARY KEY,
            record TEXT NOT NULL
          ) STRICT;`,
  },
  {
    version: 7,
    name: 'usage_records',
    sql: `CREATE TABLE usage_records (
            time_ms INTEGER NOT NULL,
            request_id TEXT NOT NULL,
            caller TEXT NOT NULL,
            environment TEXT NOT NULL,
            route TEXT NOT NULL,
            model TEXT,
            upstream TEXT,
            status INTEGER NOT NULL,
            code TEXT,
            latency_ms REAL NOT NULL,
            ttfb_ms REAL,
            stream INTEGER NOT NULL,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            cost_usd REAL,
            attempts INTEGER NOT NULL,
            replay INTEGER NOT NULL
          ) STRICT;
          CREATE INDEX usage_records_time ON usage_records (time_ms);`,
  },
  {
    version: 8,
    name: 'stored_responses',
    // One row per stored Responses API response; the caller is part of the key, so ids never cross callers.
    sql: `CREATE TABLE stored_responses (
            caller TEXT NOT NULL,
            id TEXT NOT NULL,
            response TEXT NOT NULL,
            input_items TEXT NOT NULL,
            conversation TEXT NOT NULL,
            expires_ms INTEGER NOT NULL,
            PRIMARY KEY (caller, id)
          ) STRICT;
          CREATE INDEX stored_responses_expiry ON stored_responses (expires_ms);`,
  },
  {
    version: 9,
    name: 'response_cache',
    // The exact response cache: one row per cache key (a hash of environment, scope and canonical request); the
    // total size kept in one row by triggers, so a write can evict least recently used rows until it fits.
    sql: `ALTER TABLE usage_records ADD COLUMN cache_hit INTEGER NOT NULL DEFAULT 0;
          CREATE TABLE response_cache (
            key TEXT PRIMARY KEY,
            status INTEGER NOT NULL,
            kind TEXT NOT NULL,
            headers TEXT NOT NULL,
            body TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            stored_ms INTEGER NOT NULL,
            expires_ms INTEGER NOT NULL,
            used_ms INTEGER NOT NULL
          ) STRICT;
          CREATE INDEX response_cache_used ON response_cache (used_ms);
          CREATE INDEX response_cache_expiry ON response_cache (expires_ms);
          CREATE TABLE response_cache_size (id INTEGER PRIMARY KEY CHECK (id = 1), bytes INTEGER NOT NULL) STRICT;
          INSERT INTO response_cache_size (id, bytes) VALUES (1, 0);
          CREATE TRIGGER response_cache_added AFTER INSERT ON response_cache
            BEGIN UPDATE response_cache_size SET bytes = bytes + NEW.bytes WHERE id = 1; END;
          CREATE TRIGGER response_cache_removed AFTER DELETE ON response_cache
            BEGIN UPDATE response_cache_size SET bytes = bytes - OLD.bytes WHERE id = 1; END;`,
  },
  {
    version: 10,
    name: 'usage_records_by_caller',
    // A key's usage and spend (the keys API, the dashboard's Keys page) reads only that key's rows.
    sql: `CREATE INDEX usage_records_caller_time ON usage_records (caller, time_ms);`,
  },
  {
    version: 11,
    name: 'usage_records_anomaly',
    // 1: the gateway had to correct a usage figure of the upstream's (out of range, negative, not a number).
    sql: `ALTER TABLE usage_records ADD COLUMN usage_anomaly INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    version: 12,
    name: 'native_owners',
    // Who made each id an upstream keeps for a natively forwarded call (a response, its items, a container): only
    // that caller may refer to it again. One row per id, never the content.
    sql: `CREATE TABLE native_owners (
            id TEXT PRIMARY KEY,
            caller TEXT NOT NULL,
            expires_ms INTEGER NOT NULL
          ) STRICT, WITHOUT ROWID;
          CREATE INDEX native_owners_expiry ON native_owners (expires_ms);`,
  },
  {
    version: 13,
    name: 'response_turns',
    // Stored responses as chained turns (each its own part of the conversation and its parent's id) instead of
    // rows that each held the whole conversation so far (quadratic in a conversation's length). The small
    // columns live apart from the texts (keyed by the turn's number: appended, no index), so keeping a conversation's earlier turns alive (expires_ms) never
    // rewrites their texts. The bytes and turns each caller keeps are counted in response_callers (added by the
    // store as it writes a batch, taken off by the trigger of a deleted turn), for its bound. A row of
    // migration 8 becomes a first turn whose messages are its whole conversation, so it still reads and continues.
    sql: `CREATE TABLE response_turns (
            turn INTEGER PRIMARY KEY,
            caller TEXT NOT NULL,
            id TEXT NOT NULL,
            parent_id TEXT,
            depth INTEGER NOT NULL,
            conversation_bytes INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            expires_ms INTEGER NOT NULL,
            UNIQUE (caller, id)
          ) STRICT;
          CREATE INDEX response_turns_expiry ON response_turns (expires_ms);
          CREATE INDEX response_turns_eviction ON response_turns (caller, expires_ms, depth);
          CREATE TABLE response_turn_texts (
            turn INTEGER PRIMARY KEY,
            response TEXT NOT NULL,
            input_items TEXT NOT NULL,
            messages TEXT NOT NULL
          ) STRICT;
          CREATE TABLE response_callers (caller TEXT PRIMARY KEY, turns INTEGER NOT NULL, bytes INTEGER NOT NULL) STRICT;
          CREATE TRIGGER response_turn_removed AFTER DELETE ON response_turns BEGIN
            DELETE FROM response_turn_texts WHERE turn = OLD.turn;
            UPDATE response_callers SET turns = turns - 1, bytes = bytes - OLD.bytes WHERE caller = OLD.caller;
          END;
          INSERT INTO response_turns (caller, id, parent_id, depth, conversation_bytes, bytes, expires_ms)
            SELECT caller, id, NULL, 1, length(CAST(conversation AS BLOB)),
                   length(CAST(response AS BLOB)) + length(CAST(input_items AS BLOB)) + length(CAST(conversation AS BLOB)) + 512, expires_ms -- 512: TURN_OVERHEAD_BYTES (response-history.ts)
            FROM stored_responses;
          INSERT INTO response_turn_texts (turn, response, input_items, messages)
            SELECT t.turn, s.response, s.input_items, s.conversation FROM stored_responses s
            JOIN response_turns t ON t.caller = s.caller AND t.id = s.id;
          INSERT INTO response_callers (caller, turns, bytes) SELECT caller, count(*), sum(bytes) FROM response_turns GROUP BY caller;
          DROP TABLE stored_responses;`,
  },
  {
    version: 14,
    name: 'usage_records_token_parts',
    // The parts of a record's tokens (docs/usage.md): cache reads and writes within prompt_tokens, reasoning
    // within completion_tokens. NULL where there is no usage (and on records written before).
    sql: `ALTER TABLE usage_records ADD COLUMN cache_read_tokens INTEGER;
          ALTER TABLE usage_records ADD COLUMN cache_write_tokens INTEGER;
          ALTER TABLE usage_records ADD COLUMN reasoning_tokens INTEGER;`,
  },
  {
    version: 15,
    name: 'usage_records_cache_savings',
    // What prompt caching saved on the call, in USD at its prices when it was made (docs/usage.md); negative when
    // cache writes cost more than reads saved. NULL without prices or usage (and on records written before).
    sql: `ALTER TABLE usage_records ADD COLUMN cache_savings_usd REAL;`,
  },
  {
    version: 16,
    name: 'files_and_uploads',
    // Files and uploads in parts (docs/files.md): the metadata here, the bytes under DATA_DIR/files and
    // DATA_DIR/uploads. A file is listed per owner by (created_ms, id): the cursor of GET /v1/files. A part's
    // `seq` keeps the order parts were recorded in.
    sql: `CREATE TABLE files (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            purpose TEXT NOT NULL,
            filename TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            mime_type TEXT,
            created_ms INTEGER NOT NULL,
            expires_ms INTEGER NOT NULL
          ) STRICT;
          CREATE INDEX files_owner_order ON files (owner, created_ms, id);
          CREATE INDEX files_expiry ON files (expires_ms);
          CREATE TABLE uploads (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            filename TEXT NOT NULL,
            purpose TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            mime_type TEXT NOT NULL,
            created_ms INTEGER NOT NULL,
            expires_ms INTEGER NOT NULL,
            file_ttl_ms INTEGER,
            status TEXT NOT NULL,
            file_id TEXT,
            presign_nonce TEXT,
            presign_used INTEGER NOT NULL DEFAULT 0
          ) STRICT;
          CREATE INDEX uploads_expiry ON uploads (expires_ms);
          CREATE TABLE upload_parts (
            seq INTEGER PRIMARY KEY,
            upload_id TEXT NOT NULL,
            id TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            created_ms INTEGER NOT NULL,
            UNIQUE (upload_id, id)
          ) STRICT;`,
  },
  {
    version: 17,
    name: 'batches',
    // Batches: one row per batch, one per line. A line's outcome is written once (state moves from
    // 'pending' only); the batch's counts move in the same transaction. `lease_holder`/`lease_until_ms`: the one
    // runner working on the batch (several processes share the file).
    sql: `CREATE TABLE batches (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            owner TEXT NOT NULL,
            principal TEXT NOT NULL,
            api TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            input_file_id TEXT,
            completion_window TEXT NOT NULL,
            metadata TEXT,
            status TEXT NOT NULL,
            total INTEGER NOT NULL DEFAULT 0,
            succeeded INTEGER NOT NULL DEFAULT 0,
            errored INTEGER NOT NULL DEFAULT 0,
            canceled INTEGER NOT NULL DEFAULT 0,
            expired INTEGER NOT NULL DEFAULT 0,
            errors TEXT,
            output_file_id TEXT,
            error_file_id TEXT,
            created_ms INTEGER NOT NULL,
            expires_ms INTEGER NOT NULL,
            in_progress_ms INTEGER,
            finalizing_ms INTEGER,
            completed_ms INTEGER,
            failed_ms INTEGER,
            expired_ms INTEGER,
            cancelling_ms INTEGER,
            cancelled_ms INTEGER,
            lease_holder TEXT,
            lease_until_ms INTEGER NOT NULL DEFAULT 0
          ) STRICT;
          CREATE INDEX batches_owner ON batches (owner, api, seq);
          CREATE INDEX batches_active ON batches (status) WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling');
          CREATE TABLE batch_lines (
            batch_id TEXT NOT NULL,
            idx INTEGER NOT NULL,
            custom_id TEXT NOT NULL,
            url TEXT NOT NULL,
            body TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('pending', 'succeeded', 'errored', 'canceled', 'expired')),
            status_code INTEGER,
            response TEXT,
            request_id TEXT,
            error TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            not_before_ms INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (batch_id, idx)
          ) STRICT;
          CREATE INDEX batch_lines_pending ON batch_lines (batch_id, idx) WHERE state = 'pending';`,
  },
  {
    version: 18,
    name: 'batch_native',
    // How a batch's lines are run: by the gateway, or forwarded to the upstream's own batch API, with the
    // upstream's file and batch ids written as soon as each is known (a restart polls, never submits twice).
    sql: `CREATE TABLE batch_native (
            batch_id TEXT PRIMARY KEY,
            mode TEXT NOT NULL CHECK (mode IN ('gateway', 'native')),
            upstream TEXT,
            phase TEXT NOT NULL CHECK (phase IN ('decided', 'submitted', 'collected')),
            upstream_file_id TEXT,
            upstream_batch_id TEXT,
            reason TEXT
          ) STRICT;`,
  },
  {
    version: 19,
    name: 'forwarded_files',
    // The gateway's files uploaded to an upstream's own Files API (docs/files.md, "Files in requests"): one upload per
    // file, content and upstream (and key), its id there reused until the mapping expires.
    sql: `CREATE TABLE forwarded_files (
            file_id TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            upstream TEXT NOT NULL,
            upstream_file_id TEXT NOT NULL,
            created_ms INTEGER NOT NULL,
            expires_ms INTEGER NOT NULL,
            PRIMARY KEY (file_id, sha256, upstream)
          ) STRICT;
          CREATE INDEX forwarded_files_expiry ON forwarded_files (expires_ms);`,
  },
  {
    version: 20,
    name: 'batch_fields',
    // OpenAI's Batch fields (docs/files.md, "Batches"): `output_expires_after.seconds` (the age of the output and
    // error files), the one model every line names, and the succeeded lines' tokens, added in the same write that
    // records a line's outcome (so exact across restarts, never counted twice). `usage_lines`: the succeeded lines
    // that reported usage (the sum is shown only when every succeeded line did).
    sql: `ALTER TABLE batches ADD COLUMN output_ttl_s INTEGER;
          ALTER TABLE batches ADD COLUMN model TEXT;
          ALTER TABLE batches ADD COLUMN usage_lines INTEGER NOT NULL DEFAULT 0;
          ALTER TABLE batches ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
          ALTER TABLE batches ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
          ALTER TABLE batches ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
          ALTER TABLE batches ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
          ALTER TABLE batches ADD COLUMN total_tokens INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    version: 21,
    name: 'batch_creates',
    // Anthropic's creates under way (docs/files.md, "How big an Anthropic batch can be"): a row written before a
    // create's first line, removed with its batch record (or with its lines when it fails). One left behind is a
    // create a crash cut off: the sweep removes its lines once it is older than batches.create_grace_seconds.
    sql: `CREATE TABLE batch_creates (
            batch_id TEXT PRIMARY KEY,
            started_ms INTEGER NOT NULL
          ) STRICT;
          CREATE INDEX batch_creates_started ON batch_creates (started_ms);`,
  },
  {
    version: 22,
    name: 'usage_spool_marks',
    // The usage spool (docs/usage.md, "Durability"): the records `first_seq`..`last_seq` of the local spool `spool`
    // are in usage_records, written in the same transaction as they were. A replay after a crash skips them.
    sql: `CREATE TABLE usage_spool_marks (
            spool TEXT NOT NULL,
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            stored_ms INTEGER NOT NULL,
            PRIMARY KEY (spool, first_seq)
          ) STRICT;`,
  },
  // Hourly rollups of usage records and the usage tables' size, for retention by size (docs/usage.md).
  { version: 23, name: 'usage_hours', sql: USAGE_HOURS_MIGRATION },
  {
    version: 24,
    name: 'storage_use',
    // Storage quotas (docs/files.md "Storage quotas"): the stored bytes per owner, kept by triggers.
    sql: STORAGE_USE_SQL,
  },
  {
    version: 25,
    name: 'batch_lines_until',
    // When an ended batch's lines (requests and answers) are removed (docs/files.md, "How long batch results are
    // kept"): set as it ends, to its output files' expiry (OpenAI's) or its results' (Anthropic's); the sweep of
    // ended batches removes the lines once it has passed and clears it. Batches that ended before this migration:
    // a failed one's lines at once, an Anthropic one's 29 days after its creation, an OpenAI one's when its files
    // expired by default (its output_expires_after, else files.default_ttl_seconds' default, 30 days).
    sql: `ALTER TABLE batches ADD COLUMN lines_until_ms INTEGER;
          UPDATE batches SET lines_until_ms = CASE
              WHEN status = 'failed' THEN coalesce(failed_ms, created_ms)
              WHEN api = 'anthropic' THEN created_ms + 29 * 86400000
              ELSE coalesce(completed_ms, expired_ms, cancelled_ms, created_ms)
                + coalesce(output_ttl_s * 1000, 30 * 86400000) END
            WHERE status IN ('completed', 'failed', 'expired', 'cancelled');
          CREATE INDEX batches_lines_until ON batches (lines_until_ms) WHERE lines_until_ms IS NOT NULL;`,
  },
  {
    version: 26,
    name: 'batch_results_until',
    // Anthropic's batches: until when their results can be read (batches.anthropic_results_retention_days after
    // creation, 29 by default as Anthropic's); then GET .../results is 404 batch_results_expired.
    sql: `ALTER TABLE batches ADD COLUMN results_until_ms INTEGER;
          UPDATE batches SET results_until_ms = created_ms + 29 * 86400000 WHERE api = 'anthropic';`,
  },
  // Vector stores (docs/retrieval.md): stores, files, batches, chunks and their full-text index; vectors in vec0.
  { version: 27, name: 'vector_stores', sql: VECTOR_STORES_MIGRATION },
  // A vector store file's chunk bytes count in the stored bytes ledger of its owner (the storage quotas).
  { version: 28, name: 'vector_storage_use', sql: VECTOR_STORAGE_USE_SQL },
  {
    version: 29,
    name: 'mcp_tool_calls',
    // One row per MCP tool call (docs/mcp.md, "Records"): sizes, never arguments or results. Aged out with the usage
    // records (usage.retention_days), oldest first through the time index.
    sql: `CREATE TABLE mcp_tool_calls (
            time_ms INTEGER NOT NULL,
            call_id TEXT NOT NULL,
            request_id TEXT NOT NULL,
            caller TEXT NOT NULL,
            environment TEXT NOT NULL,
            server TEXT NOT NULL,
            tool TEXT NOT NULL,
            via TEXT NOT NULL,
            outcome TEXT NOT NULL,
            code TEXT,
            duration_ms INTEGER NOT NULL,
            bytes_in INTEGER NOT NULL,
            bytes_out INTEGER NOT NULL
          ) STRICT;
          CREATE INDEX mcp_tool_calls_time ON mcp_tool_calls (time_ms);`,
  },
];
