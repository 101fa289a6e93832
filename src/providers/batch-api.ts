import type { Usage } from './contract.js';

/**
 * A provider's own batch API (OpenAI's Files + Batches, Anthropic's Message Batches, Gemini's batchGenerateContent),
 * behind one contract: the gateway's batch engine (core/batches/native-backend.ts) hands it a batch's lines, stores
 * each id it gets back as soon as it has it, polls, and records each line's result exactly as it records a line it
 * ran itself. An implementation speaks its upstream's wire format both ways: it writes each line's request in its
 * upstream's shape and gives each result back in the shape of the line's endpoint (the caller's API).
 */

/** One line of a batch as the provider gets it: the caller's body with the model already renamed to the upstream's. */
export interface NativeBatchRequest {
  /** The line's index in the gateway's batch; the upstream's custom id is derived from it (`line-<index>`). */
  index: number;
  /** The gateway endpoint the line calls (`/v1/chat/completions`, `/v1/messages`...). */
  endpoint: string;
  body: Record<string, unknown>;
}

export interface NativeSubmission {
  /** The gateway's batch id: sent in the upstream batch's metadata (or name), so `find` can recover it after a crash. */
  gatewayBatchId: string;
  /** The endpoint every line calls. */
  endpoint: string;
  /** The lines, read again from the store each time it is called (bounded memory, whatever the batch's size). */
  lines(): AsyncIterable<NativeBatchRequest>;
  /** A file this provider uploaded earlier for this batch (a restart between the upload and the create). */
  uploadedFileId: string | undefined;
  /** Called as soon as an input file is uploaded, before the batch is created: the engine stores the id. */
  onUploaded(fileId: string): Promise<void>;
}

/** What the upstream says of a batch. */
export interface NativeBatchStatus {
  /**
   * `running`: poll again. `ended`: its results can be read (completed, or cancelled / expired with what it did).
   * `failed`: the upstream will give no result (its validation refused the input, say): its lines fail.
   */
  state: 'running' | 'ended' | 'failed';
  /** The upstream's own word for it (`in_progress`, `ended`, `JOB_STATE_SUCCEEDED`...), for logs and errors. */
  upstreamStatus: string;
  /** Why it failed, in the upstream's words (secrets scrubbed), when it did. */
  reason?: string;
}

/** One line's result, as the line's endpoint answers. */
export interface NativeLineResult {
  index: number;
  /** The HTTP status the line's call would have had: 200, or the upstream's error status (500 when it gave none). */
  status: number;
  /** The answer (2xx) or the error, as JSON text in the line's endpoint's format. */
  body: string;
  /** Tokens the line used, as the upstream reported them (checked like any usage figure). */
  usage: Usage | undefined;
  /** The upstream's request id for the line, when it gives one. */
  requestId: string | null;
}

export interface NativeBatchApi {
  /** The gateway endpoints whose lines this API runs (translating where its wire format differs). */
  readonly endpoints: ReadonlySet<string>;
  /** Uploads the input where the API needs a file (reusing `uploadedFileId`), creates the batch: its upstream id. */
  submit(submission: NativeSubmission, signal: AbortSignal): Promise<{ batchId: string; fileId?: string }>;
  /** The upstream batch created for this gateway batch, if there is one (looked up by the id `submit` sent). */
  find(gatewayBatchId: string, signal: AbortSignal): Promise<string | undefined>;
  status(batchId: string, signal: AbortSignal): Promise<NativeBatchStatus>;
  /** Every result the ended batch has, streamed (a line it has no result for is absent). */
  results(batchId: string, signal: AbortSignal): AsyncIterable<NativeLineResult>;
  /** Asks the upstream to cancel; it ends later (poll `status`), with the results of the lines it did. */
  cancel(batchId: string, signal: AbortSignal): Promise<void>;
  /** Deletes what the gateway uploaded for the batch (input file), once its results are read. Best effort. */
  cleanUp?(fileId: string, signal: AbortSignal): Promise<void>;
}

/** The upstream's custom id of a line: fixed by its index (a caller's custom_id may not fit the upstream's rules). */
export function nativeCustomId(index: number): string {
  return `line-${index}`;
}

/** The line index of an upstream custom id, or undefined when it is not one the gateway wrote. */
export function indexOfCustomId(customId: unknown): number | undefined {
  if (typeof customId !== 'string') return undefined;
  const match = /^line-(\d{1,9})$/.exec(customId);
  return match ? Number(match[1]) : undefined;
}
