/**
 * The batch store: batches and their lines, one row per line, so a batch survives a restart and a line's
 * answer is recorded exactly once, keyed by (batch id, line index). The SQLite implementation is
 * `sqlite/sqlite-batches.ts`; the surfaces (OpenAI's Batch API, Anthropic's Message Batches) are translations of
 * this one model (src/core/batches/).
 */

/** A batch's lifecycle (OpenAI's statuses; Anthropic's `processing_status` is a view of them). */
export type BatchStatus =
  'validating' | 'in_progress' | 'finalizing' | 'completed' | 'failed' | 'expired' | 'cancelling' | 'cancelled';

/** The statuses a runner works on; the others are final. */
export const ACTIVE_BATCH_STATUSES: readonly BatchStatus[] = ['validating', 'in_progress', 'finalizing', 'cancelling'];

/** Which API created the batch: each surface sees only its own. */
export type BatchApi = 'openai' | 'anthropic';

/** A line's state: `pending` until its one outcome is recorded. */
export type LineState = 'pending' | 'succeeded' | 'errored' | 'canceled' | 'expired';

export interface BatchError {
  code: string;
  message: string;
  /** 1-based line of the input file, when the error is about one. */
  line?: number;
  param?: string;
}

export interface BatchCounts {
  total: number;
  succeeded: number;
  errored: number;
  canceled: number;
  expired: number;
}

export interface BatchRecord {
  id: string;
  /** The caller that created it (`key:<id>`, `admin`, `oauth:<sub>`...): only it can see or touch it. */
  owner: string;
  /** What the owner may do, as it was when the batch was created (JSON; keys are read again at run time). */
  principal: string;
  api: BatchApi;
  /** The URL every line calls (`/v1/chat/completions`...). */
  endpoint: string;
  inputFileId: string | null;
  completionWindow: string;
  metadata: Record<string, string> | null;
  status: BatchStatus;
  counts: BatchCounts;
  errors: BatchError[] | null;
  outputFileId: string | null;
  errorFileId: string | null;
  createdMs: number;
  expiresMs: number;
  inProgressMs: number | null;
  finalizingMs: number | null;
  completedMs: number | null;
  failedMs: number | null;
  expiredMs: number | null;
  cancellingMs: number | null;
  cancelledMs: number | null;
  /**
   * OpenAI's `output_expires_after.seconds`: the output and error files expire this long after they are written;
   * null: the files' default age.
   */
  outputTtlSeconds: number | null;
  /** The model every line names (set when the input is read, OpenAI's batches); null when they differ or before. */
  model: string | null;
  /** Tokens of the succeeded lines, summed as each line's outcome is recorded (exactly once, with it). */
  usage: BatchUsage;
  /**
   * When the batch's lines (requests and answers) are removed by the sweep of ended batches
   * (`sweepEndedLines`): set when it ends, to its output files' expiry (OpenAI's) or its results' (Anthropic's);
   * null while it runs, and again once its lines are gone.
   */
  linesUntilMs: number | null;
  /** Anthropic's: its results can be read until then (`batches.anthropic_results_retention_days` after creation). */
  resultsUntilMs: number | null;
}

/**
 * Token figures of a batch's succeeded lines, in OpenAI's Batch `usage` terms: `input` all input (the cache reads
 * part of it), `reasoning` part of `output`. `lines` is how many succeeded lines reported usage: the sum is the
 * batch's whole usage only when it equals the succeeded count.
 */
export interface BatchUsage {
  lines: number;
  input: number;
  cached: number;
  output: number;
  reasoning: number;
  total: number;
}

/** One line's tokens (BatchUsage without `lines`). */
export type LineUsage = Omit<BatchUsage, 'lines'>;

export const NO_BATCH_USAGE: Readonly<BatchUsage> = {
  lines: 0,
  input: 0,
  cached: 0,
  output: 0,
  reasoning: 0,
  total: 0,
};

export interface NewBatchLine {
  index: number;
  customId: string;
  url: string;
  /** The line's request body, JSON text. */
  body: string;
}

export interface BatchLine extends NewBatchLine {
  state: LineState;
  statusCode: number | null;
  /** The answer's body (JSON text) as the gateway answered it; null until answered. */
  response: string | null;
  requestId: string | null;
  /** A line that never got an answer (canceled, expired, refused before a call): JSON `{code, message}`. */
  error: string | null;
  attempts: number;
}

/** A line's one outcome. */
export interface LineOutcome {
  state: Exclude<LineState, 'pending'>;
  statusCode: number | null;
  response: string | null;
  requestId: string | null;
  error: string | null;
  /** A succeeded line's tokens, added to the batch's usage in the same write as the outcome (never twice). */
  usage?: LineUsage | undefined;
}

/** The time stamps a status change sets, by status. */
export type BatchStamp = Partial<
  Pick<
    BatchRecord,
    | 'inProgressMs'
    | 'finalizingMs'
    | 'completedMs'
    | 'failedMs'
    | 'expiredMs'
    | 'cancellingMs'
    | 'cancelledMs'
    | 'outputFileId'
    | 'errorFileId'
    | 'errors'
    | 'model'
    | 'linesUntilMs'
  >
>;

/**
 * How a batch's lines are run, decided once when it first reaches `in_progress` and kept (a restart goes on the same
 * way): by the gateway itself, or forwarded to its upstream's own batch API (providers/batch-api.ts). A forwarded
 * batch's upstream ids are stored as soon as each upstream call returns them, so a restart polls the batch it
 * created instead of creating another.
 */
export interface NativeBatchState {
  mode: 'gateway' | 'native';
  /** The upstream it was forwarded to (native), or null. */
  upstream: string | null;
  /** `decided`: nothing created upstream yet; `submitted`: the upstream batch exists; `collected`: its results are recorded. */
  phase: 'decided' | 'submitted' | 'collected';
  upstreamFileId: string | null;
  upstreamBatchId: string | null;
  /** Why it runs the way it does (a fallback's cause, say): for the log and the batch's view. */
  reason: string | null;
}

/** The bounds of one step of `sweepCreates`: lines, and bytes of their bodies. */
export interface SweepStep {
  lines: number;
  bytes: number;
}

/** What one step of `sweepCreates` removed: lines, and creates whose last lines (and mark) went. */
export interface SweptCreates {
  lines: number;
  creates: number;
}

/** What one step of `sweepEndedLines` removed: lines, and batches whose last lines went. */
export interface SweptLines {
  lines: number;
  batches: number;
}

/** A batch's lease and who holds it (`leasesHeldBy`). */
export interface HeldLease {
  id: string;
  holder: string;
}

/** A batch not yet ended as the dashboard shows it: the record and who runs its lines. */
export interface BatchInFlight {
  batch: BatchRecord;
  /** `gateway`, `upstream <name>` (forwarded to that upstream's batch API), or `undecided` (not yet started). */
  runBy: string;
}

/** Who runs a batch's lines, from its stored decision (none yet: undecided). */
export function runByOf(state: NativeBatchState | undefined): string {
  if (!state) return 'undecided';
  return state.mode === 'native' && state.upstream ? `upstream ${state.upstream}` : 'gateway';
}

export interface BatchStore {
  create(batch: BatchRecord): Promise<void>;
  /** The batch if `owner` owns it (another caller's batch is absent, like one that never was). */
  get(owner: string, id: string): Promise<BatchRecord | undefined>;
  /** The owner's batches of one API, newest first, after the batch `after` (exclusive). */
  list(owner: string, api: BatchApi, after: string | undefined, limit: number): Promise<BatchRecord[]>;
  /** Moves a batch from one of `from` to `to` (with its stamps); false when it was in none of them. */
  transition(id: string, from: readonly BatchStatus[], to: BatchStatus, stamp: BatchStamp): Promise<boolean>;
  /** Deletes an ended batch and its lines (Anthropic's DELETE). */
  delete(owner: string, id: string): Promise<boolean>;
  /** Adds lines (a line already there is left as it is: validation may run again after a crash). */
  addLines(batchId: string, lines: readonly NewBatchLine[]): Promise<void>;
  /**
   * Marks a create under way (Anthropic's: its lines are written before its record), before its first line: the
   * mark is removed with the record's write (`create`) or by `discardLines`, so one left behind is a create a crash
   * cut off, and `sweepCreates` finds its lines without looking at any other.
   */
  beginCreate(batchId: string, startedMs: number): Promise<void>;
  /**
   * Removes the lines of a batch that was never created (an Anthropic create whose body failed part way: its lines
   * are written before its record), and its create mark; returns how many lines. The lines of a batch that exists
   * are left alone.
   */
  discardLines(batchId: string): Promise<number>;
  /**
   * One bounded step of the sweep of creates a crash cut off: removes lines of the creates marked (`beginCreate`)
   * before `startedBeforeMs` that never got a record, oldest first, in index order, at most `step.lines` of them
   * and no more once `step.bytes` bytes of bodies are removed (always at least one line, whatever its size), and
   * the mark of each create whose lines are all gone. Returns what it removed: nothing of either means nothing is
   * left to sweep.
   */
  sweepCreates(startedBeforeMs: number, step: SweepStep): Promise<SweptCreates>;
  /**
   * Takes (or keeps) the lease of up to `limit` active batches whose lease is free or already `holder`'s: one
   * runner works on a batch at a time, across processes and instances sharing the store.
   */
  claim(holder: string, nowMs: number, leaseMs: number, limit: number): Promise<BatchRecord[]>;
  /**
   * The active batches whose lease holder's name starts with `prefix` (lease running or not), at most `limit`: a
   * runner starting again under the same instance identity finds the leases its dead predecessor held.
   */
  leasesHeldBy(prefix: string, limit: number): Promise<HeldLease[]>;
  /**
   * One bounded step of the sweep of ended batches' lines: removes lines of batches whose `linesUntilMs` is at or
   * before `nowMs`, the earliest first, in index order, at most `step.lines` of them and no more once `step.bytes`
   * bytes (request, answer and error) are removed (always at least one line), and clears `linesUntilMs` of each
   * batch whose lines are all gone (its record stays). Nothing of either removed: nothing is left to sweep.
   */
  sweepEndedLines(nowMs: number, step: SweepStep): Promise<SweptLines>;
  /** Extends the lease; false when `holder` no longer holds it. */
  renew(id: string, holder: string, untilMs: number): Promise<boolean>;
  release(id: string, holder: string): Promise<void>;
  /** Pending lines due by `nowMs`, in index order, after `afterIndex`. */
  pendingLines(batchId: string, afterIndex: number, nowMs: number, limit: number): Promise<BatchLine[]>;
  pendingCount(batchId: string): Promise<number>;
  /** Records a line's outcome once: false when it already had one (the batch's counts move only on true). */
  recordOutcome(batchId: string, index: number, outcome: LineOutcome): Promise<boolean>;
  /** A pending line to try again no earlier than `notBeforeMs` (refused by a limit). */
  defer(batchId: string, index: number, notBeforeMs: number): Promise<void>;
  /** Every pending line of the batch ends as `state` (cancel, expiry); returns how many did. */
  closePending(batchId: string, state: 'canceled' | 'expired', error: string): Promise<number>;
  /** Lines in index order after `afterIndex` (results, output files). */
  lines(batchId: string, afterIndex: number, limit: number): Promise<BatchLine[]>;
  /** Every active batch (dashboard, metrics): few by nature. */
  active(limit: number): Promise<BatchRecord[]>;
  /** How the batch's lines are run, once decided (undefined before). */
  nativeState(batchId: string): Promise<NativeBatchState | undefined>;
  /** Writes (or replaces) that decision and its upstream ids. */
  saveNativeState(batchId: string, state: NativeBatchState): Promise<void>;
}
