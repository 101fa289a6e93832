import { randomUUID } from 'node:crypto';
import type { GrantableRoute } from '../../config/names.js';
import { GatewayError } from '../../errors/gateway-error.js';
import {
  NO_BATCH_USAGE,
  type BatchApi,
  type BatchRecord,
  type BatchStore,
  type NewBatchLine,
} from '../../store/batch-contract.js';
import type { BatchFiles } from './batch-files.js';
import { EXPIRES_AFTER_MAX_SECONDS } from '../../wire/openai-files.js';
import { outputTtlOf } from './output-expiry.js';
import type { BatchLinesQuota } from './batch-lines-quota.js';

/**
 * The endpoints a batch line may call (the gateway's own paths of the same name), and the route each line is a call
 * of: the right its owner needs, the route its usage record is kept under.
 */
export const BATCH_ENDPOINT_ROUTES: Readonly<Record<string, GrantableRoute>> = {
  '/v1/chat/completions': 'chat',
  '/v1/responses': 'responses',
  '/v1/embeddings': 'embeddings',
  '/v1/messages': 'messages',
};
export const BATCH_ENDPOINTS: readonly string[] = Object.keys(BATCH_ENDPOINT_ROUTES);

/** The one completion window (OpenAI's and Anthropic's): a batch not done by then expires. */
export const COMPLETION_WINDOW = '24h';
const WINDOW_MS = 24 * 3_600_000;

/** Lines are written to the store this many at a time (one transaction each). */
export const LINE_CHUNK = 500;
/**
 * ...or fewer, once they hold this many bytes (Anthropic's create): SQLite's writes are synchronous, and a
 * transaction of 500 large requests held the event loop too long; 64 KiB keeps each short for a little more time
 * in all (docs/files.md, "How big an Anthropic batch can be").
 */
export const LINE_CHUNK_BYTES = 64 * 1024;

export interface BatchLimits {
  /** Lines (requests) per batch, at most. */
  maxLines: number;
  /** One line's bytes, at most. */
  maxLineBytes: number;
  /** The longest `output_expires_after.seconds` accepted (the files' `max_ttl_seconds`); default OpenAI's 30 days. */
  maxOutputTtlSeconds?: number;
  /**
   * How long an Anthropic batch's results can be read after its creation (`batches.anthropic_results_retention_days`);
   * default Anthropic's 29 days.
   */
  anthropicResultsRetentionMs?: number;
  /** How long a create's lines may wait for its record (`batches.create_grace_seconds`); default an hour. */
  createGraceMs?: number;
}

/** Anthropic keeps a batch's results 29 days after its creation. */
export const ANTHROPIC_RESULTS_RETENTION_MS = 29 * 86_400_000;

/** A batch's new id: `batch_<32 hex>` (OpenAI's surface) or `msgbatch_<32 hex>` (Anthropic's). */
export function newBatchId(api: BatchApi): string {
  return `${api === 'openai' ? 'batch' : 'msgbatch'}_${randomUUID().replaceAll('-', '')}`;
}

const BATCH_ID = { openai: /^batch_[0-9a-f]{32}$/, anthropic: /^msgbatch_[0-9a-f]{32}$/ } as const;

/** True for an id `newBatchId(api)` could have made (a list cursor is checked with it before the store). */
export function isBatchId(api: BatchApi, id: string): boolean {
  return BATCH_ID[api].test(id);
}

/** A new record in its first status. */
export function freshRecord(
  api: BatchApi,
  owner: string,
  principal: string,
  spec: {
    endpoint: string;
    inputFileId: string | null;
    metadata: Record<string, string> | null;
    outputTtlSeconds?: number | null;
    /** Anthropic's: how long its results can be read after its creation. */
    resultsRetentionMs?: number;
  },
  nowMs: number,
): BatchRecord {
  return {
    id: newBatchId(api),
    owner,
    principal,
    api,
    endpoint: spec.endpoint,
    inputFileId: spec.inputFileId,
    completionWindow: COMPLETION_WINDOW,
    metadata: spec.metadata,
    // OpenAI's batch is validated (its file read) by the runner; Anthropic's requests came in the body.
    status: api === 'openai' ? 'validating' : 'in_progress',
    counts: { total: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
    errors: null,
    outputFileId: null,
    errorFileId: null,
    createdMs: nowMs,
    expiresMs: nowMs + WINDOW_MS,
    inProgressMs: api === 'openai' ? null : nowMs,
    finalizingMs: null,
    completedMs: null,
    failedMs: null,
    expiredMs: null,
    cancellingMs: null,
    cancelledMs: null,
    outputTtlSeconds: spec.outputTtlSeconds ?? null,
    model: null,
    usage: { ...NO_BATCH_USAGE },
    linesUntilMs: null,
    resultsUntilMs: api === 'anthropic' ? nowMs + (spec.resultsRetentionMs ?? ANTHROPIC_RESULTS_RETENTION_MS) : null,
  };
}

/**
 * The batch model's operations, whichever API asks (src/routes/batches-*.ts translate): create, read, list, cancel,
 * delete. Every read and change names the owner: another caller's batch is `batch_not_found`, like one that never
 * was. The work itself is the runner's (batch-runner.ts), woken by `onCreated`.
 */
/** One request of Anthropic's create: its custom_id, its params as the line's body, and the model they name. */
export interface BatchRequest {
  customId: string;
  body: string;
  model: string;
}

/** What a BatchService works with. */
export interface BatchServiceOptions {
  store: BatchStore;
  files: BatchFiles | undefined;
  limits: BatchLimits;
  /** Wakes the runner: a batch was created. */
  onCreated: () => void;
  now?: () => number;
  /** The storage quotas the lines count against (batch-lines-quota.ts); none: not counted. */
  linesQuota?: BatchLinesQuota | undefined;
}

export class BatchService {
  private readonly store: BatchStore;
  private readonly files: BatchFiles | undefined;
  private readonly limits: BatchLimits;
  private readonly onCreated: () => void;
  private readonly now: () => number;
  private readonly linesQuota: BatchLinesQuota | undefined;

  constructor({ store, files, limits, onCreated, now = Date.now, linesQuota }: BatchServiceOptions) {
    this.store = store;
    this.files = files;
    this.limits = limits;
    this.onCreated = onCreated;
    this.now = now;
    this.linesQuota = linesQuota;
  }

  /**
   * OpenAI's `POST /v1/batches`: over an uploaded JSONL file of purpose `batch`, read and checked by the runner.
   * `outputExpiresAfter` is the request's `output_expires_after` as it came (checked here: output-expiry.ts).
   */
  async createFromFile(
    owner: string,
    principal: string,
    spec: {
      inputFileId: string;
      endpoint: string;
      metadata: Record<string, string> | null;
      outputExpiresAfter?: unknown;
    },
  ): Promise<BatchRecord> {
    const outputTtlSeconds = outputTtlOf(
      spec.outputExpiresAfter,
      this.limits.maxOutputTtlSeconds ?? EXPIRES_AFTER_MAX_SECONDS,
    );
    const file = await this.filesOrFail().get(owner, spec.inputFileId);
    if (!file) throw new GatewayError('batch_input_invalid', { field: 'input_file_id', problem: 'no such file' });
    if (file.purpose !== 'batch')
      throw new GatewayError('batch_input_invalid', {
        field: 'input_file_id',
        problem: `the file's purpose is "${file.purpose}", not "batch"`,
      });
    const record = freshRecord(
      'openai',
      owner,
      principal,
      { endpoint: spec.endpoint, inputFileId: spec.inputFileId, metadata: spec.metadata, outputTtlSeconds },
      this.now(),
    );
    await this.store.create(record);
    this.onCreated();
    return record;
  }

  /**
   * Anthropic's `POST /v1/messages/batches`: the requests are the lines, stored LINE_CHUNK at a time as they come
   * (the route reads them from the body as a stream, already checked), the batch record only after the last one:
   * a runner never sees the batch before all its lines are there (it would find nothing pending and finish it
   * empty). More than `maxLines` fails as soon as one too many arrives. Whatever fails part way (a bad request, a
   * body cut off, the store) removes the lines written so far: a batch that was never created leaves nothing. A
   * crash part way leaves them with the create's mark (`beginCreate`, before the first line): the sweep of
   * abandoned creates removes them (src/wiring/batch-create-sweep-wiring.ts).
   */
  async createFromRequests(
    owner: string,
    principal: string,
    requests: AsyncIterable<BatchRequest> | Iterable<BatchRequest>,
  ): Promise<BatchRecord> {
    const record = freshRecord(
      'anthropic',
      owner,
      principal,
      {
        endpoint: '/v1/messages',
        inputFileId: null,
        metadata: null,
        resultsRetentionMs: this.limits.anthropicResultsRetentionMs ?? ANTHROPIC_RESULTS_RETENTION_MS,
      },
      this.now(),
    );
    let count = 0;
    // The one model every request names (the batch's `model`); null once two differ.
    let model: string | null | undefined;
    let chunk: NewBatchLine[] = [];
    let chunkBytes = 0;
    // The create's mark, written before its first line (a crash after it leaves lines the sweep finds by it).
    let begun = false;
    // The lines' bytes, counted against the owner's storage quota before each chunk is stored.
    let bytes = 0;
    const createGraceMs = this.limits.createGraceMs ?? 3_600_000;
    const store = async (lines: NewBatchLine[]) => {
      for (const line of lines) bytes += Buffer.byteLength(line.body);
      await this.linesQuota?.hold(owner, record.id, bytes, this.now() + createGraceMs);
      if (!begun) {
        await this.store.beginCreate(record.id, this.now());
        begun = true;
      }
      await this.store.addLines(record.id, lines);
    };
    try {
      for await (const request of requests) {
        if (count === this.limits.maxLines)
          throw new GatewayError('batch_input_invalid', {
            field: 'requests',
            problem: `more than ${this.limits.maxLines} requests`,
          });
        chunk.push({ index: count++, customId: request.customId, url: '/v1/messages', body: request.body });
        model = model === undefined || model === request.model ? request.model : null;
        chunkBytes += request.body.length;
        if (chunk.length === LINE_CHUNK || chunkBytes >= LINE_CHUNK_BYTES) {
          await store(chunk);
          chunk = [];
          chunkBytes = 0;
        }
      }
      if (chunk.length > 0) await store(chunk);
      record.counts.total = count;
      record.model = model ?? null;
      await this.store.create(record);
    } catch (error) {
      // The record was not written (or its write failed): the lines are nobody's. A failed clean-up leaves rows
      // no read ever reaches (every read goes through a batch record) and the create's mark, so the sweep of
      // abandoned creates removes them later: the original error is what the caller needs.
      if (begun) await this.store.discardLines(record.id).catch(() => 0);
      await this.linesQuota?.release(record.id);
      throw error;
    }
    // Counted as long as its results are kept (a failure to say so leaves the create's shorter count).
    if (record.resultsUntilMs !== null)
      await this.linesQuota?.until(owner, record.id, record.resultsUntilMs).catch(() => undefined);
    this.onCreated();
    return record;
  }

  async get(owner: string, api: BatchApi, id: string): Promise<BatchRecord> {
    const record = await this.store.get(owner, id);
    if (!record || record.api !== api) throw new GatewayError('batch_not_found', { batch_id: id.slice(0, 200) });
    return record;
  }

  list(owner: string, api: BatchApi, after: string | undefined, limit: number): Promise<BatchRecord[]> {
    return this.store.list(owner, api, after, limit);
  }

  /**
   * Cancel: no new line starts; the runner ends the pending ones as canceled, lets the lines in flight finish, and
   * writes the results. A batch that cannot be cancelled (finalizing, cancelling, or ended) is answered as it is
   * now: the surface decides whether that is an answer or a refusal (OpenAI's: 409 for an ended batch).
   */
  async cancel(owner: string, api: BatchApi, id: string): Promise<BatchRecord> {
    await this.get(owner, api, id);
    const moved = await this.store.transition(id, ['validating', 'in_progress'], 'cancelling', {
      cancellingMs: this.now(),
    });
    if (moved) this.onCreated();
    return this.get(owner, api, id);
  }

  /** Anthropic's DELETE: an ended batch and its results; one still running is refused (cancel it first). */
  async delete(owner: string, api: BatchApi, id: string): Promise<void> {
    const record = await this.get(owner, api, id);
    if (!(await this.store.delete(owner, id)))
      throw new GatewayError('batch_not_ended', { batch_id: id, status: record.status });
    await this.linesQuota?.release(id);
  }

  private filesOrFail(): BatchFiles {
    if (!this.files)
      throw new GatewayError('batch_input_invalid', { field: 'input_file_id', problem: 'no file store' });
    return this.files;
  }
}
