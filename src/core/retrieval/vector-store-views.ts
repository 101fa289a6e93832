import type {
  FileCounts,
  VectorFileBatchRecord,
  VectorFileRecord,
  VectorStoreRecord,
} from '../../store/vector-contract.js';
import type {
  FileCountsWire,
  ListPageWire,
  VectorStoreFileBatchObject,
  VectorStoreFileObject,
  VectorStoreObject,
} from '../../wire/openai-vector-stores.js';

const DAY_MS = 86_400_000;
const seconds = (ms: number): number => Math.floor(ms / 1000);
const counts = (c: FileCounts): FileCountsWire => ({ ...c });

/** When a store expires: `days` after it was last active; null without `expires_after`. */
export function expiresAtMs(store: VectorStoreRecord): number | null {
  return store.expiresAfterDays === null ? null : store.lastActiveMs + store.expiresAfterDays * DAY_MS;
}

/** A store as OpenAI answers it, with the gateway's four fields. */
export function storeView(store: VectorStoreRecord): VectorStoreObject {
  const expiresAt = expiresAtMs(store);
  const status = store.expiredMs !== null ? 'expired' : store.fileCounts.in_progress > 0 ? 'in_progress' : 'completed';
  return {
    id: store.id,
    object: 'vector_store',
    created_at: seconds(store.createdMs),
    name: store.name,
    usage_bytes: store.usageBytes,
    last_active_at: seconds(store.lastActiveMs),
    metadata: store.metadata,
    status,
    file_counts: counts(store.fileCounts),
    expires_after: store.expiresAfterDays === null ? null : { anchor: 'last_active_at', days: store.expiresAfterDays },
    expires_at: expiresAt === null ? null : seconds(expiresAt),
    embedding_model: store.embeddingModel,
    dimensions: store.dimensions,
    metric: store.metric,
    index: store.index,
  };
}

/** A store's file as OpenAI answers it (`chunking_strategy` always `static`: `auto` is shown as what it was). */
export function fileView(file: VectorFileRecord): VectorStoreFileObject {
  return {
    id: file.fileId,
    object: 'vector_store.file',
    created_at: seconds(file.createdMs),
    vector_store_id: file.storeId,
    usage_bytes: file.usageBytes,
    status: file.status,
    last_error: file.lastError,
    attributes: file.attributes,
    chunking_strategy: {
      type: 'static',
      static: { max_chunk_size_tokens: file.chunking.maxTokens, chunk_overlap_tokens: file.chunking.overlapTokens },
    },
  };
}

/** A file batch: in progress while any of its files is, then cancelled (a cancel), failed (all failed) or completed. */
export function batchView(batch: VectorFileBatchRecord): VectorStoreFileBatchObject {
  const c = batch.fileCounts;
  const status =
    c.in_progress > 0
      ? 'in_progress'
      : batch.cancelledMs !== null
        ? 'cancelled'
        : c.total > 0 && c.failed === c.total
          ? 'failed'
          : 'completed';
  return {
    id: batch.id,
    object: 'vector_store.files_batch',
    created_at: seconds(batch.createdMs),
    vector_store_id: batch.storeId,
    status,
    file_counts: counts(c),
  };
}

/** OpenAI's list page: all five fields (its SDK reads `data` and `has_more`; other clients the ids too). */
export function listView<T extends { id: string }>(data: T[], hasMore: boolean): ListPageWire<T> {
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: hasMore,
  };
}
