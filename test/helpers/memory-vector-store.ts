/**
 * A TEST DOUBLE of the vector store contract (src/store/vector-contract.ts), in memory, for tests of what sits above
 * the store (core/retrieval/search-service.ts): the search half answers as the contract says (owner isolation,
 * searchable = completed files, exact cosine `nearest` scored by `similarityScore`, `fileIds` honoured, `matchText`
 * scores in (0, 1]), and it records what it was asked. The real backends (sqlite, postgres) and their contract suite
 * are elsewhere; the rest of the contract here only throws.
 */
import {
  similarityScore,
  type ChunkHit,
  type SearchableFile,
  type VectorAttributes,
  type VectorStoreRecord,
  type VectorStoreStore,
} from '../../src/store/vector-contract.js';

export interface MemoryChunk {
  seq: number;
  text: string;
  vector: number[];
}

export interface MemoryFile {
  fileId: string;
  filename: string;
  attributes?: VectorAttributes;
  /** Default `completed`; another status is not searchable. */
  status?: 'completed' | 'in_progress' | 'failed';
  chunks: MemoryChunk[];
}

export type MemoryVectorStore = VectorStoreStore & {
  /** Adds a store (its defaults: cosine, flat, live, 3 dimensions) with its files. */
  seed(store: Partial<VectorStoreRecord> & { id: string; owner: string }, files?: MemoryFile[]): VectorStoreRecord;
  /** What was asked: `nearest` / `matchText` calls (store id, k, fileIds), `touchStore` calls. */
  readonly calls: {
    nearest: { storeId: string; k: number; fileIds: readonly string[] | undefined }[];
    matchText: { storeId: string; text: string; k: number; fileIds: readonly string[] | undefined }[];
    touched: { id: string; nowMs: number }[];
  };
};

export function memoryVectorStore(): MemoryVectorStore {
  const stores = new Map<string, VectorStoreRecord>();
  const files = new Map<string, MemoryFile[]>();
  const calls: MemoryVectorStore['calls'] = { nearest: [], matchText: [], touched: [] };
  const notHere = (name: string) => () => Promise.reject(new Error(`memory vector store (test double): no ${name}`));

  const chunksOf = (storeId: string, fileIds: readonly string[] | undefined) => {
    const allowed = fileIds ? new Set(fileIds) : undefined;
    return (files.get(storeId) ?? [])
      .filter((f) => (f.status ?? 'completed') === 'completed' && (!allowed || allowed.has(f.fileId)))
      .flatMap((f) => f.chunks.map((c) => ({ file: f, chunk: c })));
  };
  const ranked = (hits: ChunkHit[], k: number) =>
    hits
      .sort((a, b) => b.score - a.score || (a.fileId < b.fileId ? -1 : a.fileId > b.fileId ? 1 : a.seq - b.seq))
      .slice(0, k);

  return {
    capabilities: { backend: 'sqlite', metrics: ['cosine'], indexes: ['flat'] },
    calls,
    seed(partial, seeded = []) {
      const record: VectorStoreRecord = {
        principal: '{}',
        name: partial.id,
        metadata: null,
        createdMs: 0,
        lastActiveMs: 0,
        expiresAfterDays: null,
        expiredMs: null,
        embeddingModel: 'emb-small',
        dimensions: 3,
        dimensionsDeclared: true,
        metric: 'cosine',
        index: 'flat',
        usageBytes: 0,
        fileCounts: { in_progress: 0, completed: seeded.length, failed: 0, cancelled: 0, total: seeded.length },
        ...partial,
      };
      stores.set(record.id, record);
      files.set(record.id, seeded);
      return record;
    },
    getStore(owner, id) {
      const store = stores.get(id);
      return Promise.resolve(store && store.owner === owner ? { ...store } : undefined);
    },
    touchStore(id, nowMs) {
      calls.touched.push({ id, nowMs });
      const store = stores.get(id);
      if (store) store.lastActiveMs = nowMs;
      return Promise.resolve();
    },
    searchableFiles(storeId) {
      const found: SearchableFile[] = (files.get(storeId) ?? [])
        .filter((f) => (f.status ?? 'completed') === 'completed')
        .map((f) => ({ fileId: f.fileId, filename: f.filename, attributes: f.attributes ?? {} }));
      return Promise.resolve(found);
    },
    nearest({ store, vector, k, fileIds }) {
      calls.nearest.push({ storeId: store.id, k, fileIds });
      const hits = chunksOf(store.id, fileIds).map(({ file, chunk }) => ({
        storeId: store.id,
        fileId: file.fileId,
        seq: chunk.seq,
        text: chunk.text,
        score: similarityScore('cosine', cosine(vector, chunk.vector)),
      }));
      return Promise.resolve(ranked(hits, k));
    },
    matchText({ storeId, text, k, fileIds }) {
      calls.matchText.push({ storeId, text, k, fileIds });
      const terms = wordsOf(text);
      const hits: ChunkHit[] = [];
      for (const { file, chunk } of chunksOf(storeId, fileIds)) {
        const words = new Set(wordsOf(chunk.text));
        const found = terms.filter((t) => words.has(t)).length;
        if (found > 0)
          hits.push({ storeId, fileId: file.fileId, seq: chunk.seq, text: chunk.text, score: found / terms.length });
      }
      return Promise.resolve(ranked(hits, k));
    },
    createStore: notHere('createStore'),
    listStores: notHere('listStores'),
    updateStore: notHere('updateStore'),
    deleteStore: notHere('deleteStore'),
    sweepExpired: notHere('sweepExpired'),
    addFiles: notHere('addFiles'),
    getFile: notHere('getFile'),
    listFiles: notHere('listFiles'),
    updateAttributes: notHere('updateAttributes'),
    deleteFile: notHere('deleteFile'),
    fileChunks: notHere('fileChunks'),
    getBatch: notHere('getBatch'),
    cancelBatch: notHere('cancelBatch'),
    claimFiles: notHere('claimFiles'),
    renewLease: notHere('renewLease'),
    completeFile: notHere('completeFile'),
    endFile: notHere('endFile'),
    usage: notHere('usage'),
    close: () => Promise.resolve(),
  };
}

function cosine(a: Float32Array, b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

function wordsOf(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}
