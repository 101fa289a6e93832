import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { GatewayError } from '../../errors/gateway-error.js';
import { chunkBytes } from '../../store/vector-rows.js';
import {
  vectorReservationId,
  type NewChunk,
  type VectorFileError,
  type VectorFileRecord,
  type VectorStoreRecord,
  type VectorStoreStore,
} from '../../store/vector-contract.js';
import type { FileContentSource } from '../files/file-service.js';
import type { StorageQuota } from '../files/storage-quota.js';
import type { CallAs } from '../pipeline/call-as.js';
import { chunkText } from './chunker.js';
import { extractText, type ExtractRequest } from './document-text.js';
import { extractTextOffThread } from './extract-off-thread.js';
import { embedTexts } from './query-embedder.js';
import type { RetrievalStats } from './retrieval-stats.js';
import { requestedDimensions } from './search-service.js';

export interface IngestionBounds {
  maxFileBytes: number;
  maxFileChars: number;
  maxFileChunks: number;
  embedBatchSize: number;
}

export interface IngestionRunnerOptions {
  store: VectorStoreStore;
  files: FileContentSource;
  callAs: CallAs;
  bounds: IngestionBounds;
  /** Files ingested at once by this process. */
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  /** This process's name in the leases (instance and pid); a random suffix tells two runners apart. */
  identity: string;
  log: { warn(object: object, message: string): void; error(object: object, message: string): void };
  /**
   * The storage quotas (docs/retrieval.md, "Operators"): a file's chunk bytes are reserved before they are stored,
   * and a file that would pass its owner's quota fails. None: not counted (the files live in another database).
   */
  quota?: StorageQuota;
  /** This process's tallies (the metrics): files by outcome, chunks embedded. */
  stats?: RetrievalStats;
  now?: () => number;
}

/** A refused embedding call is tried again after its Retry-After this many times before the file fails. */
const MAX_EMBED_RETRIES = 5;
/** The longest Retry-After waited for (a longer one fails the file; the caller can add it again). */
const MAX_RETRY_WAIT_MS = 60_000;

/** Why ingestion of a file stopped before it was stored: the file ends `failed` with this. */
class FileFailure extends Error {
  constructor(readonly error: VectorFileError) {
    super(error.message);
  }
}

/** The lease was lost (the file was cancelled, removed, or taken over): stop, write nothing. */
class LeaseLost extends Error {}

/**
 * Fills vector stores (docs/retrieval.md, "Ingestion"): the process's runner claims files `in_progress` with a
 * lease in the store (one runner per file across processes; a dead runner's files are taken over once its lease
 * runs out), reads each from the Files API, extracts its text, cuts it into chunks by tokens, embeds the chunks as
 * the store's owner through the gateway's own embeddings pipeline (its rights, limits, budgets, retries, usage
 * records and cost apply), and stores them with the file's `completed` status in one transaction: after a crash a
 * file is searchable whole or not at all, and ingesting it again replaces what a lost run may have written.
 */
export class IngestionRunner {
  readonly #o: IngestionRunnerOptions;
  readonly #now: () => number;
  readonly holder: string;
  #running = 0;
  #timer: NodeJS.Timeout | undefined;
  #looking = false;
  #again = false;
  #closed = false;
  readonly #inFlight = new Set<Promise<void>>();
  /** Aborted by `close`: a file waiting out a Retry-After stops waiting (a minute would hold the shutdown). */
  readonly #closing = new AbortController();

  constructor(options: IngestionRunnerOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.holder = `${options.identity}:${randomBytes(4).toString('hex')}`;
  }

  start(): void {
    this.#timer = setInterval(() => this.wake(), this.#o.pollMs).unref();
    this.wake();
  }

  /** Files in progress of this process (the metrics). */
  get running(): number {
    return this.#running;
  }

  /** Looks for files now (files were added); a look under way looks again when it ends. */
  wake(): void {
    if (this.#closed) return;
    if (this.#looking) {
      this.#again = true;
      return;
    }
    this.#looking = true;
    void this.#claim()
      .catch((error: unknown) => this.#o.log.error({ err: error }, 'vector store ingestion: claiming files failed'))
      .finally(() => {
        this.#looking = false;
        if (this.#again) {
          this.#again = false;
          this.wake();
        }
      });
  }

  async #claim(): Promise<void> {
    const free = this.#o.concurrency - this.#running;
    if (free <= 0) return;
    const claimed = await this.#o.store.claimFiles(this.holder, this.#o.leaseMs, free, this.#now());
    for (const { file, store } of claimed) {
      this.#running++;
      const work = this.#ingest(file, store).finally(() => {
        this.#running--;
        this.#inFlight.delete(work);
        this.wake();
      });
      this.#inFlight.add(work);
    }
  }

  async #ingest(file: VectorFileRecord, store: VectorStoreRecord): Promise<void> {
    const { storeId, fileId } = file;
    const renew = setInterval(
      () => {
        void this.#o.store
          .renewLease(storeId, fileId, this.holder, this.#o.leaseMs, this.#now())
          .catch(() => undefined);
      },
      Math.max(50, Math.floor(this.#o.leaseMs / 3)),
    ).unref();
    try {
      const chunks = await this.#chunksOf(file, store);
      if (this.#closed) return;
      const reservation = await this.#reserve(file, store, chunks);
      // Completed: the completion's statement ended the reservation. Otherwise nothing was stored: end it here.
      const release = async () => {
        if (reservation) await this.#o.quota?.release(reservation);
      };
      const outcome = await this.#o.store
        .completeFile(storeId, fileId, this.holder, chunks)
        .catch(async (error: unknown) => {
          await release();
          throw error;
        });
      if (outcome.kind !== 'completed') await release();
      if (outcome.kind === 'dimension_mismatch') {
        this.#o.log.warn({ storeId, fileId, ...outcome }, 'vector store ingestion: dimension mismatch');
      }
      if (outcome.kind === 'lost') await this.#countLost(file);
      else this.#o.stats?.countFile(outcome.kind === 'completed' ? 'completed' : 'failed');
    } catch (error) {
      if (this.#closed) return;
      if (error instanceof LeaseLost) {
        await this.#countLost(file);
        return;
      }
      const failure =
        error instanceof FileFailure
          ? error.error
          : ({ code: 'server_error', message: 'the file could not be ingested (an internal error)' } as const);
      if (!(error instanceof FileFailure)) {
        this.#o.log.error({ err: error, storeId, fileId }, 'vector store ingestion failed');
      }
      if (await this.#o.store.endFile(storeId, fileId, this.holder, 'failed', failure).catch(() => false)) {
        this.#o.stats?.countFile('failed');
      } else await this.#countLost(file);
    } finally {
      clearInterval(renew);
    }
  }

  /**
   * Reserves the chunks' bytes for the store's owner (the reservation's id, or undefined without quotas); a file
   * they would not fit fails, naming the quota.
   */
  async #reserve(file: VectorFileRecord, store: VectorStoreRecord, chunks: NewChunk[]): Promise<string | undefined> {
    const quota = this.#o.quota;
    if (!quota) return undefined;
    const id = vectorReservationId(file.storeId, file.fileId);
    const bytes = chunks.reduce((sum, chunk) => sum + chunkBytes(chunk), 0);
    try {
      await quota.take({ owner: store.owner, id, bytes, floor: bytes, checked: true });
      return id;
    } catch (error) {
      if (!(error instanceof GatewayError)) throw error;
      throw new FileFailure({ code: 'server_error', message: quotaMessage(error, bytes) });
    }
  }

  /** A file this process lost: `cancelled` when its caller cancelled it, else `lost` (removed, taken over). */
  async #countLost(file: VectorFileRecord): Promise<void> {
    const stats = this.#o.stats;
    if (!stats) return;
    const now = await this.#o.store.getFile(file.owner, file.storeId, file.fileId).catch(() => undefined);
    stats.countFile(now?.status === 'cancelled' ? 'cancelled' : 'lost');
  }

  async #chunksOf(file: VectorFileRecord, store: VectorStoreRecord): Promise<NewChunk[]> {
    const { bounds } = this.#o;
    const bytes = await this.#read(file, store.owner);
    const request: ExtractRequest = { bytes, filename: file.filename, maxChars: bounds.maxFileChars };
    // pdf.js and mammoth parse a part in one go (~400 ms for a 3 MB page): they run on a thread of their own.
    const extracted = await (parsedOffThread(bytes, file.filename) ? extractTextOffThread : extractText)(request);
    if ('error' in extracted) throw new FileFailure(extracted.error);
    const pieces = await chunkText(extracted.text, { ...file.chunking, maxChunks: bounds.maxFileChunks + 1 });
    if (pieces.length > bounds.maxFileChunks) {
      throw new FileFailure({
        code: 'invalid_file',
        message: `the file makes more than ${bounds.maxFileChunks} chunks (vector_stores.max_file_chunks)`,
      });
    }
    if (pieces.length === 0) throw new FileFailure({ code: 'invalid_file', message: 'the file holds no text' });
    const chunks: NewChunk[] = [];
    for (let start = 0; start < pieces.length; start += bounds.embedBatchSize) {
      if (this.#closed) throw new LeaseLost(); // closing: the lease runs out and another run starts the file over
      const batch = pieces.slice(start, start + bounds.embedBatchSize);
      const vectors = await this.#embed(
        store,
        batch.map((p) => p.text),
      );
      batch.forEach((piece, i) => chunks.push({ ...piece, vector: vectors[i]! }));
      this.#o.stats?.countChunks(batch.length);
      if (!(await this.#o.store.renewLease(file.storeId, file.fileId, this.holder, this.#o.leaseMs, this.#now()))) {
        throw new LeaseLost();
      }
    }
    return chunks;
  }

  /** The file's bytes, at most `maxFileBytes` (more: the file fails); a file gone meanwhile fails. */
  async #read(file: VectorFileRecord, owner: string): Promise<Uint8Array> {
    const opened = await this.#o.files.openContent(owner, file.fileId);
    if (!opened) {
      throw new FileFailure({ code: 'invalid_file', message: 'the file was deleted or expired before it was read' });
    }
    const max = this.#o.bounds.maxFileBytes;
    if (opened.object.bytes > max) {
      opened.stream.destroy();
      throw new FileFailure({
        code: 'invalid_file',
        message: `the file is ${opened.object.bytes} bytes, more than ${max} (vector_stores.max_file_bytes)`,
      });
    }
    const parts: Buffer[] = [];
    let size = 0;
    for await (const part of opened.stream as AsyncIterable<Buffer>) {
      size += part.length;
      if (size > max) {
        opened.stream.destroy();
        throw new FileFailure({ code: 'invalid_file', message: `the file is more than ${max} bytes` });
      }
      parts.push(part);
    }
    return Buffer.concat(parts, size);
  }

  /** The texts' vectors, as the store's owner; a refusal with Retry-After is waited out a few times. */
  async #embed(store: VectorStoreRecord, texts: string[]): Promise<Float32Array[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        const { vectors } = await embedTexts({
          callAs: this.#o.callAs,
          as: { owner: store.owner, principal: store.principal },
          model: store.embeddingModel,
          texts,
          dimensions: requestedDimensions(store),
        });
        return vectors;
      } catch (error) {
        if (!(error instanceof GatewayError)) throw error;
        const wait = retryWaitOf(error);
        if (wait !== undefined && attempt < MAX_EMBED_RETRIES && !this.#closed) {
          await sleep(wait, undefined, { signal: this.#closing.signal, ref: false }).catch(() => undefined);
          if (this.#closed) throw new LeaseLost(); // closing: the lease runs out and another run starts the file over
          continue;
        }
        throw new FileFailure({
          code: 'server_error',
          message: `embedding with ${store.embeddingModel} was refused: ${error.code} (${error.message})`.slice(
            0,
            1000,
          ),
        });
      }
    }
  }

  /** Stops claiming; files under way stop at their next step and keep their lease (another run takes them over). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#closing.abort();
    clearInterval(this.#timer);
    await Promise.allSettled([...this.#inFlight]);
  }
}

/** Why a file's chunks were not stored, from the quota's refusal (its details name the quota). */
function quotaMessage(error: GatewayError, bytes: number): string {
  const details = (error.details ?? {}) as { quota?: string; limit_bytes?: number; used_bytes?: number };
  const quota = details.quota ? ` (${details.quota}: ${details.limit_bytes} bytes)` : '';
  switch (error.code) {
    case 'storage_quota_exceeded':
      return `the file's ${bytes} bytes of chunks would pass the owner's storage quota${quota}; ${details.used_bytes} bytes are used: delete files or vector stores to make room, then add the file again`;
    case 'storage_full':
      return `the file's ${bytes} bytes of chunks would pass the gateway's total storage quota${quota}`;
    case 'exceeds_storage_quota':
      return `the file's ${bytes} bytes of chunks are more than a storage quota allows${quota}`;
    default:
      return `the file's chunks could not be stored: ${error.code}`;
  }
}

/** Text files past this are read on a thread too: a hostile 8 MB HTML held the loop ~25 ms between slices. */
const THREAD_TEXT_BYTES = 1024 * 1024;

/**
 * Whether a file is read on a thread (extract-off-thread.ts): a PDF or a zip (DOCX) by its name or first bytes,
 * or any file past THREAD_TEXT_BYTES.
 */
function parsedOffThread(bytes: Uint8Array, filename: string): boolean {
  if (/\.(pdf|docx)$/i.test(filename) || bytes.byteLength > THREAD_TEXT_BYTES) return true;
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, 1024));
  return head.indexOf('%PDF-', 0, 'latin1') >= 0 || (bytes[0] === 0x50 && bytes[1] === 0x4b);
}

/** How long to wait before trying a refused embedding call again; undefined: not worth trying again. */
function retryWaitOf(error: GatewayError): number | undefined {
  if (error.code !== 'rate_limited' && error.code !== 'upstream_rate_limited' && error.code !== 'upstream_busy') {
    return undefined;
  }
  const header = error.headers?.['retry-after'];
  const seconds = typeof header === 'string' && /^\d{1,6}$/.test(header) ? Number(header) : 1;
  const ms = seconds * 1000;
  return ms <= MAX_RETRY_WAIT_MS ? Math.max(100, ms) : undefined;
}
