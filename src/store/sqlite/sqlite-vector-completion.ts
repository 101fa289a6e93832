import type { CompleteOutcome, NewChunk, VectorMetric, VectorStoreRecord } from '../vector-contract.js';
import { chunkBytes, dimensionOf, fileOf, storeOf, type StoreRow } from '../vector-rows.js';
import { MAX_STAGINGS, type SqliteVectorChunks } from './sqlite-vector-chunks.js';
import type { prepareStagingStatements, prepareVectorStatements } from './sqlite-vector-statements.js';
import type { SqliteWriteBatcher } from './write-batcher.js';

/**
 * Chunks written per transaction while a file is staged. Measured at 1,536 dimensions with both cores busy: 4 gave
 * an event-loop delay of ~11 ms p99 while a 1,000-chunk file was written (16 gave ~35 ms), in about the same total.
 */
export const STAGE_SLICE = 4;

type Statements = ReturnType<typeof prepareVectorStatements> & ReturnType<typeof prepareStagingStatements>;

/**
 * `completeFile` of the embedded vector store. vec0 writes cost ~0.5 ms a chunk at 1,536 dimensions, so a file of
 * more than STAGE_SLICE chunks is not written in one transaction (a 1,000-chunk file would hold the serving thread
 * half a second or more): its chunks are staged STAGE_SLICE per transaction, invisible (rows `live = 0`, vectors marked
 * with the staging's `gen`, which every KNN excludes inside vec0, `sqlite-vector-chunks.ts`), then published in one
 * short transaction with the file's `completed` status. A file is thus still searchable whole or not at all.
 *
 * The holder is checked in every transaction: a file cancelled, removed or taken over meanwhile stops the staging
 * (`lost`), and its staged rows are dropped, a slice at a time, by it or by `collectAbandoned` (the sweep) for a
 * holder that died. A store with MAX_STAGINGS files staged already (the KNN excludes that many) completes the
 * next one in one transaction.
 */
export class SqliteFileCompletion {
  constructor(
    private readonly batcher: SqliteWriteBatcher,
    private readonly s: Statements,
    private readonly chunks: SqliteVectorChunks,
  ) {}

  async complete(storeId: string, fileId: string, holder: string, chunks: NewChunk[]): Promise<CompleteOutcome> {
    const got = dimensionOf(chunks);
    if (got === undefined || chunks.length <= STAGE_SLICE)
      return this.batcher.run(() => this.publish(storeId, fileId, holder, chunks));
    const started = await this.batcher.run(() => {
      const checked = this.check(storeId, fileId, holder, got);
      if ('kind' in checked) return checked;
      const staging = this.s.stagingOf.get(storeId, fileId);
      if (!staging && (this.s.stagings.get(storeId) as number) >= MAX_STAGINGS) return 'at_once' as const;
      // A staging left by an earlier holder keeps its gen (its rows stay excluded) and is emptied first.
      return { gen: this.s.stage.get(storeId, fileId, holder, staging?.dimensions ?? got)!.gen, store: checked };
    });
    if (started === 'at_once') return this.batcher.run(() => this.publish(storeId, fileId, holder, chunks));
    if ('kind' in started) return started;
    const { gen, store } = started;
    if (!(await this.emptyStaging(storeId, fileId, holder, store.metric))) return { kind: 'lost' };
    for (let at = 0; at < chunks.length; at += STAGE_SLICE) {
      const written = await this.batcher.run(() => {
        // Its staging too: rows written under a gen no longer excluded would be seen by searches.
        if (!this.holds(storeId, fileId, holder) || this.s.stagingOf.get(storeId, fileId)?.holder !== holder)
          return false;
        // Emptied: its rows (of an earlier holder's dimension, maybe) are gone, so its dimension may change now.
        if (at === 0) this.s.restage.run(got, storeId, fileId);
        const file = { storeId, fileId, metric: store.metric, dimension: got };
        this.chunks.write(file, chunks.slice(at, at + STAGE_SLICE), { gen });
        return true;
      });
      if (!written) {
        await this.emptyStaging(storeId, fileId, holder, store.metric, true);
        return { kind: 'lost' };
      }
    }
    const outcome = await this.batcher.run(() => this.publish(storeId, fileId, holder, chunks, true));
    if (outcome.kind !== 'completed') await this.emptyStaging(storeId, fileId, holder, store.metric, true);
    return outcome;
  }

  /**
   * Drops the staged rows of files no one works on any more (their holder died, or the file ended otherwise),
   * at most `limit` stagings; the sweep calls it.
   */
  async collectAbandoned(limit: number, metricOf: (storeId: string) => VectorMetric | undefined): Promise<void> {
    for (const staging of this.s.abandoned.all(limit)) {
      const metric = metricOf(staging.store_id) ?? 'cosine';
      await this.emptyStaging(staging.store_id, staging.file_id, staging.holder, metric, true, false);
    }
  }

  /**
   * The one transaction that makes a file completed: while `holder` holds it in progress and the store's dimension
   * is the vectors' (or none yet, then set), its chunks (written now, or staged) replace any it had.
   */
  private publish(
    storeId: string,
    fileId: string,
    holder: string,
    chunks: NewChunk[],
    staged = false,
  ): CompleteOutcome {
    const got = dimensionOf(chunks);
    const checked = this.check(storeId, fileId, holder, got);
    if ('kind' in checked) return checked;
    if (staged && this.s.stagingOf.get(storeId, fileId)?.holder !== holder) return { kind: 'lost' };
    if (got !== undefined && checked.dimensions === null) this.s.setDimensions.run(got, storeId);
    this.chunks.dropFile(storeId, fileId, checked.dimensions, checked.metric, staged ? 'live' : 'all');
    if (staged) {
      this.chunks.publish(storeId, fileId);
      // Its gen is no longer excluded: the vectors are visible from this commit on, with the rows made live.
      this.s.unstage.run(storeId, fileId);
    } else if (got !== undefined) {
      this.chunks.write({ storeId, fileId, metric: checked.metric, dimension: got }, chunks);
    }
    const bytes = chunks.reduce((sum, chunk) => sum + chunkBytes(chunk), 0);
    this.s.complete.run(bytes, chunks.length, storeId, fileId);
    return { kind: 'completed', file: fileOf(this.s.fileByKey.get(storeId, fileId)!) };
  }

  /** The store when `holder` holds the file in progress and `got` fits its dimension; else the outcome (failing the file on a mismatch). */
  private check(
    storeId: string,
    fileId: string,
    holder: string,
    got: number | undefined,
  ): VectorStoreRecord | Exclude<CompleteOutcome, { kind: 'completed' }> {
    const row: StoreRow | undefined = this.s.storeById.get(storeId);
    if (!row || !this.holds(storeId, fileId, holder)) return { kind: 'lost' };
    const store = storeOf(row, []);
    if (got !== undefined && store.dimensions !== null && store.dimensions !== got) {
      const message = `the file's vectors have ${got} dimensions; the vector store's have ${store.dimensions}`;
      this.s.end.run('failed', 'invalid_file', message, storeId, fileId, holder);
      return { kind: 'dimension_mismatch', expected: store.dimensions, got };
    }
    return store;
  }

  private holds(storeId: string, fileId: string, holder: string): boolean {
    return (
      this.s.fileByKey.get(storeId, fileId)?.status === 'in_progress' && this.s.holderOf.get(storeId, fileId) === holder
    );
  }

  /**
   * Drops the file's staged rows a slice per transaction while the staging is `holder`'s (and, unless `abandoned`
   * is being collected, while the holder still holds the file); with `remove`, then removes the staging itself, in
   * the transaction that found no row left (its gen must stay excluded while any is there). False when the
   * staging or the file was taken meanwhile.
   */
  private async emptyStaging(
    storeId: string,
    fileId: string,
    holder: string,
    metric: VectorMetric,
    remove = false,
    holderMustHold = !remove,
  ): Promise<boolean> {
    for (;;) {
      const step = await this.batcher.run(() => {
        const staging = this.s.stagingOf.get(storeId, fileId);
        if (staging?.holder !== holder || (holderMustHold && !this.holds(storeId, fileId, holder))) return 'taken';
        const dropped = this.chunks.dropFileSlice(
          storeId,
          fileId,
          staging.dimensions,
          metric,
          'staged',
          STAGE_SLICE * 8,
        );
        if (dropped === STAGE_SLICE * 8) return 'more';
        if (remove) this.s.unstage.run(storeId, fileId);
        return 'done';
      });
      if (step !== 'more') return step === 'done';
    }
  }
}
