import { GatewayError } from '../../errors/gateway-error.js';
import {
  VECTOR_INDEX_KINDS,
  VECTOR_METRICS,
  type ChunkingRecord,
  type ListQuery,
  type NewVectorFile,
  type VectorFileStatus,
  type VectorStoreRecord,
  type VectorStoreStore,
} from '../../store/vector-contract.js';
import type {
  DeletedWire,
  FileContentPageWire,
  ListPageWire,
  SearchPageWire,
  VectorStoreFileBatchObject,
  VectorStoreFileObject,
  VectorStoreObject,
} from '../../wire/openai-vector-stores.js';
import type { FileService } from '../files/file-service.js';
import { randomId } from '../files/file-ids.js';
import type { CallingAs } from '../pipeline/call-as.js';
import { chunkingOf } from './chunker.js';
import type { FileSearch } from './file-search.js';
import { searchInputOf } from './search-input.js';
import type { StorageQuota } from '../files/storage-quota.js';
import {
  attributesOf,
  bodyObject,
  expiryDaysOf,
  fileIdsOf,
  invalid,
  isObject,
  metadataOf,
  oneOf,
  optionalString,
  MAX_NAME_CHARS,
} from './vector-store-input.js';
import { batchView, fileView, listView, storeView } from './vector-store-views.js';

export const VECTOR_STORE_ID_PREFIX = 'vs_';
export const FILE_BATCH_ID_PREFIX = 'vsfb_';
const MAX_DIMENSIONS = 16_384;

export interface VectorStoreDefaults {
  embeddingModel: string;
  dimensions: number | undefined;
  metric: VectorStoreRecord['metric'];
  index: VectorStoreRecord['index'];
  maxBatchFiles: number;
  /** Files one store may hold (`vector_stores.max_files_per_store`). */
  maxFilesPerStore: number;
}

export interface VectorStoreServiceOptions {
  store: VectorStoreStore;
  files: FileService;
  search: FileSearch;
  defaults: VectorStoreDefaults;
  /** Throws `model_not_found` for a model this gateway does not serve. */
  checkModel(model: string): void;
  /**
   * The storage quotas (docs/retrieval.md, "Operators"): a caller whose stored bytes (files and vector stores) left
   * no room is refused files added to a store. None: not counted (the files live in another database).
   */
  quota?: StorageQuota;
  /** Files were added: the ingestion runner looks for work now rather than at its next poll. */
  wake(): void;
  now?: () => number;
}

/**
 * OpenAI's Vector Stores API on the gateway's own storage (docs/retrieval.md): each store and its files belong to
 * the caller that created them (another caller's id is as unknown as a made-up one), are created with the model
 * that embeds them and how they are searched, and are filled in the background (ingestion-runner.ts).
 */
export class VectorStoreService {
  readonly #o: VectorStoreServiceOptions;
  readonly #now: () => number;

  constructor(options: VectorStoreServiceOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  async create(as: CallingAs, raw: unknown): Promise<VectorStoreObject> {
    const body = bodyObject(raw);
    const { defaults, store } = this.#o;
    const name = optionalString(body, 'name', MAX_NAME_CHARS) ?? '';
    optionalString(body, 'description', 512); // accepted as OpenAI's clients send it, not kept (OpenAI shows none)
    const metadata = body.metadata === undefined ? null : metadataOf(body.metadata);
    const expiresAfterDays = body.expires_after === undefined ? null : expiryDaysOf(body.expires_after);
    const embeddingModel = optionalString(body, 'embedding_model', 256) ?? defaults.embeddingModel;
    if (embeddingModel === '') throw invalid('embedding_model', 'must name a model');
    const dimensions = dimensionsOf(body.dimensions) ?? defaults.dimensions ?? null;
    const metric = oneOf(body.metric, 'metric', VECTOR_METRICS) ?? defaults.metric;
    const index = oneOf(body.index, 'index', VECTOR_INDEX_KINDS) ?? defaults.index;
    const can = store.capabilities;
    if (!can.metrics.includes(metric) || !can.indexes.includes(index)) {
      throw new GatewayError('vector_index_unsupported', {
        ...(can.metrics.includes(metric) ? { index } : { metric }),
        backend: can.backend,
        metrics: can.metrics,
        indexes: can.indexes,
      });
    }
    const fileIds = body.file_ids === undefined ? [] : fileIdsOf(body.file_ids, 'file_ids', defaults.maxBatchFiles);
    const chunking = chunkingFrom(body.chunking_strategy, 'chunking_strategy');
    this.#o.checkModel(embeddingModel);
    if (fileIds.length > defaults.maxFilesPerStore) {
      throw invalid(
        'file_ids',
        `a vector store takes at most ${defaults.maxFilesPerStore} files (vector_stores.max_files_per_store)`,
      );
    }
    const files = await this.#filesToAdd(as.owner, fileIds, 'file_ids');
    if (files.length > 0) await this.#assertRoom(as.owner); // refused before the store is made: nothing is kept
    const nowMs = this.#now();
    const record = await store.createStore({
      id: randomId(VECTOR_STORE_ID_PREFIX),
      owner: as.owner,
      principal: as.principal,
      name,
      metadata,
      createdMs: nowMs,
      lastActiveMs: nowMs,
      expiresAfterDays,
      embeddingModel,
      dimensions,
      metric,
      index,
    });
    if (files.length > 0) {
      await store.addFiles(files.map((f) => newFile(record, f, { attributes: {}, chunking, nowMs })));
      this.#o.wake();
    }
    return storeView((await store.getStore(as.owner, record.id)) ?? record);
  }

  async list(owner: string, query: ListQuery): Promise<ListPageWire<VectorStoreObject>> {
    const page = await this.#o.store.listStores(owner, query);
    return listView(page.data.map(storeView), page.hasMore);
  }

  async get(owner: string, id: string): Promise<VectorStoreObject> {
    return storeView(await this.#storeOf(owner, id));
  }

  async update(owner: string, id: string, raw: unknown): Promise<VectorStoreObject> {
    const body = bodyObject(raw);
    const name = body.name === null ? '' : optionalString(body, 'name', MAX_NAME_CHARS);
    const patch = {
      ...(name !== undefined ? { name } : {}),
      ...(body.metadata !== undefined ? { metadata: metadataOf(body.metadata) } : {}),
      ...(body.expires_after !== undefined ? { expiresAfterDays: expiryDaysOf(body.expires_after) } : {}),
      ...(typeof body.embedding_model === 'string' ? { embeddingModel: body.embedding_model } : {}),
    };
    if (body.embedding_model !== undefined) {
      const model = optionalString(body, 'embedding_model', 256);
      if (!model) throw invalid('embedding_model', 'must name a model');
      this.#o.checkModel(model);
      // Files in progress are embedded with the model their run read when it claimed them: a change now would
      // leave the store holding the old model's vectors, searched with the new model's (silently wrong results
      // when both have one dimension). The backend refuses only once vectors are stored.
      const current = await this.#storeOf(owner, id);
      if (current.embeddingModel !== model && current.fileCounts.in_progress > 0) {
        throw new GatewayError('vector_store_holds_vectors', {
          embedding_model: current.embeddingModel,
          requested: model,
          in_progress: current.fileCounts.in_progress,
          reason: 'files are being embedded with the current model; change it once they are done',
        });
      }
    }
    const updated = await this.#o.store.updateStore(owner, id, patch);
    if (updated === 'holds_vectors') {
      const current = await this.#storeOf(owner, id);
      throw new GatewayError('vector_store_holds_vectors', {
        embedding_model: current.embeddingModel,
        requested: body.embedding_model,
      });
    }
    if (!updated) throw storeNotFound(id);
    return storeView(updated);
  }

  async delete(owner: string, id: string): Promise<DeletedWire> {
    if (!(await this.#o.store.deleteStore(owner, id))) throw storeNotFound(id);
    return { id, object: 'vector_store.deleted', deleted: true };
  }

  async addFile(owner: string, storeId: string, raw: unknown): Promise<VectorStoreFileObject> {
    const body = bodyObject(raw);
    const store = await this.#liveStore(owner, storeId);
    if (typeof body.file_id !== 'string') throw invalid('file_id', 'required: the id of one of your files');
    const [file] = await this.#filesToAdd(owner, [body.file_id], 'file_id');
    this.#assertStoreRoom(store, 1, 'file_id');
    const attributes = attributesOf(body.attributes);
    const chunking = chunkingFrom(body.chunking_strategy, 'chunking_strategy');
    await this.#assertRoom(owner);
    await this.#adding(owner, storeId, () =>
      this.#o.store.addFiles([newFile(store, file!, { attributes, chunking, nowMs: this.#now() })]),
    );
    await this.#o.store.touchStore(storeId, this.#now());
    this.#o.wake();
    const added = await this.#o.store.getFile(owner, storeId, body.file_id);
    if (!added) throw storeNotFound(storeId); // the store was deleted meanwhile (with its files)
    return fileView(added);
  }

  async createBatch(owner: string, storeId: string, raw: unknown): Promise<VectorStoreFileBatchObject> {
    const body = bodyObject(raw);
    const store = await this.#liveStore(owner, storeId);
    const max = this.#o.defaults.maxBatchFiles;
    if ((body.file_ids === undefined) === (body.files === undefined)) {
      throw invalid('file_ids', 'send either file_ids or files, not both and not neither');
    }
    const attributes = attributesOf(body.attributes);
    const chunking = chunkingFrom(body.chunking_strategy, 'chunking_strategy');
    const wanted: { id: string; attributes: typeof attributes; chunking: ChunkingRecord }[] = [];
    if (body.file_ids !== undefined) {
      for (const id of fileIdsOf(body.file_ids, 'file_ids', max)) wanted.push({ id, attributes, chunking });
    } else {
      if (!Array.isArray(body.files) || body.files.length === 0 || body.files.length > max) {
        throw invalid('files', `must be an array of 1 to ${max} {file_id, attributes?, chunking_strategy?}`);
      }
      const seen = new Set<string>();
      body.files.forEach((entry: unknown, i) => {
        const at = `files[${i}]`;
        if (!isObject(entry) || typeof entry.file_id !== 'string' || entry.file_id.length > 128) {
          throw invalid(`${at}.file_id`, 'required: the id of one of your files');
        }
        if (seen.has(entry.file_id)) throw invalid(`${at}.file_id`, `${entry.file_id} is named twice`);
        seen.add(entry.file_id);
        wanted.push({
          id: entry.file_id,
          attributes: entry.attributes === undefined ? attributes : attributesOf(entry.attributes, `${at}.attributes`),
          chunking:
            entry.chunking_strategy === undefined
              ? chunking
              : chunkingFrom(entry.chunking_strategy, `${at}.chunking_strategy`),
        });
      });
    }
    const field = body.file_ids !== undefined ? 'file_ids' : 'files';
    const found = await this.#filesToAdd(
      owner,
      wanted.map((w) => w.id),
      field,
    );
    this.#assertStoreRoom(store, found.length, field);
    await this.#assertRoom(owner);
    const nowMs = this.#now();
    const batch = { id: randomId(FILE_BATCH_ID_PREFIX), storeId, owner, createdMs: nowMs };
    await this.#adding(owner, storeId, () =>
      this.#o.store.addFiles(
        found.map((file, i) => ({ ...newFile(store, file, { ...wanted[i]!, nowMs }), batchId: batch.id })),
        batch,
      ),
    );
    await this.#o.store.touchStore(storeId, nowMs);
    this.#o.wake();
    const added = await this.#o.store.getBatch(owner, storeId, batch.id);
    if (!added) throw storeNotFound(storeId); // the store was deleted meanwhile (with its batches)
    return batchView(added);
  }

  async getFile(owner: string, storeId: string, fileId: string): Promise<VectorStoreFileObject> {
    await this.#storeOf(owner, storeId);
    const file = await this.#o.store.getFile(owner, storeId, fileId);
    if (!file) throw fileNotFound(storeId, fileId);
    return fileView(file);
  }

  async listFiles(
    owner: string,
    storeId: string,
    query: ListQuery & { status?: VectorFileStatus; batchId?: string },
  ): Promise<ListPageWire<VectorStoreFileObject>> {
    await this.#storeOf(owner, storeId);
    if (query.batchId !== undefined && !(await this.#o.store.getBatch(owner, storeId, query.batchId))) {
      throw new GatewayError('vector_store_file_batch_not_found', { batch_id: query.batchId.slice(0, 64) });
    }
    const page = await this.#o.store.listFiles(owner, storeId, query);
    return listView(page.data.map(fileView), page.hasMore);
  }

  async updateFile(owner: string, storeId: string, fileId: string, raw: unknown): Promise<VectorStoreFileObject> {
    const body = bodyObject(raw);
    if (body.attributes === undefined) throw invalid('attributes', 'required (an object, or null to clear them)');
    const attributes = attributesOf(body.attributes);
    await this.#storeOf(owner, storeId);
    const file = await this.#o.store.updateAttributes(owner, storeId, fileId, attributes);
    if (!file) throw fileNotFound(storeId, fileId);
    return fileView(file);
  }

  async deleteFile(owner: string, storeId: string, fileId: string): Promise<DeletedWire> {
    await this.#storeOf(owner, storeId);
    if (!(await this.#o.store.deleteFile(owner, storeId, fileId))) throw fileNotFound(storeId, fileId);
    return { id: fileId, object: 'vector_store.file.deleted', deleted: true };
  }

  async fileContent(owner: string, storeId: string, fileId: string): Promise<FileContentPageWire> {
    await this.#storeOf(owner, storeId);
    const texts = await this.#o.store.fileChunks(owner, storeId, fileId);
    if (!texts) throw fileNotFound(storeId, fileId);
    return {
      object: 'vector_store.file_content.page',
      data: texts.map((text) => ({ type: 'text', text })),
      has_more: false,
      next_page: null,
    };
  }

  async getBatch(owner: string, storeId: string, batchId: string): Promise<VectorStoreFileBatchObject> {
    await this.#storeOf(owner, storeId);
    const batch = await this.#o.store.getBatch(owner, storeId, batchId);
    if (!batch) throw new GatewayError('vector_store_file_batch_not_found', { batch_id: batchId.slice(0, 64) });
    return batchView(batch);
  }

  async cancelBatch(owner: string, storeId: string, batchId: string): Promise<VectorStoreFileBatchObject> {
    await this.#storeOf(owner, storeId);
    const batch = await this.#o.store.cancelBatch(owner, storeId, batchId, this.#now());
    if (!batch) throw new GatewayError('vector_store_file_batch_not_found', { batch_id: batchId.slice(0, 64) });
    return batchView(batch);
  }

  /** `POST /v1/vector_stores/{id}/search`: the caller's store searched with its own model. */
  async search(as: CallingAs, storeId: string, raw: unknown): Promise<SearchPageWire> {
    const input = searchInputOf(bodyObject(raw));
    await this.#liveStore(as.owner, storeId);
    const result = await this.#o.search({ as, vectorStoreIds: [storeId], ...input });
    return {
      object: 'vector_store.search_results.page',
      search_query: result.queries,
      data: result.hits.map((hit) => ({
        file_id: hit.fileId,
        filename: hit.filename,
        score: hit.score,
        attributes: hit.attributes,
        content: [{ type: 'text', text: hit.text }],
      })),
      has_more: false,
      next_page: null,
    };
  }

  /**
   * Adds files to a store found live a moment ago: a store deleted meanwhile makes the backend refuse (a RangeError
   * in SQLite, a foreign key in PostgreSQL), which is the caller's 404, not a 500.
   */
  async #adding(owner: string, storeId: string, add: () => Promise<void>): Promise<void> {
    try {
      await add();
    } catch (error) {
      if (!(await this.#o.store.getStore(owner, storeId))) throw storeNotFound(storeId);
      throw error;
    }
  }

  /**
   * Refuses files added for an owner whose stored bytes leave no room for one more byte, as the Files API refuses an
   * upload (429 storage_quota_exceeded, 507 storage_full); the chunks' own bytes are checked when they are stored.
   */
  async #assertRoom(owner: string): Promise<void> {
    await this.#o.quota?.assertRoom(owner, 1);
  }

  async #storeOf(owner: string, id: string): Promise<VectorStoreRecord> {
    const store = await this.#o.store.getStore(owner, id);
    if (!store) throw storeNotFound(id);
    return store;
  }

  /** The store, refused when it expired (nothing is added to or searched in a store whose chunks are gone). */
  async #liveStore(owner: string, id: string): Promise<VectorStoreRecord> {
    const store = await this.#storeOf(owner, id);
    if (store.expiredMs !== null) {
      throw new GatewayError('vector_store_expired', { id, expired_at: new Date(store.expiredMs).toISOString() });
    }
    return store;
  }

  /**
   * Refuses files past `maxFilesPerStore` (counting a file added again as new: the bound is approximate by at most
   * the files added at once, never exceeded by more).
   */
  #assertStoreRoom(store: VectorStoreRecord, adding: number, field: string): void {
    const max = this.#o.defaults.maxFilesPerStore;
    if (store.fileCounts.total + adding > max) {
      throw invalid(
        field,
        `the vector store holds ${store.fileCounts.total} files and takes at most ${max} (vector_stores.max_files_per_store)`,
      );
    }
  }

  /** The owner's files by id, in order; one that is not theirs (or gone) is a 404 naming it. */
  async #filesToAdd(owner: string, ids: readonly string[], field: string): Promise<{ id: string; filename: string }[]> {
    const found: { id: string; filename: string }[] = [];
    for (const [i, id] of ids.entries()) {
      const file = await this.#o.files.get(owner, id);
      if (!file) {
        throw new GatewayError('file_not_found', {
          id: id.slice(0, 64),
          field: ids.length > 1 ? `${field}[${i}]` : field,
        });
      }
      found.push({ id, filename: file.filename });
    }
    return found;
  }
}

function dimensionsOf(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_DIMENSIONS) {
    throw invalid('dimensions', `a whole number from 1 to ${MAX_DIMENSIONS}`);
  }
  return value;
}

function chunkingFrom(value: unknown, field: string): ChunkingRecord {
  const outcome = chunkingOf(value);
  if ('problem' in outcome) throw invalid(outcome.field ? `${field}.${outcome.field}` : field, outcome.problem);
  return outcome;
}

function newFile(
  store: VectorStoreRecord,
  file: { id: string; filename: string },
  how: { attributes: NewVectorFile['attributes']; chunking: ChunkingRecord; nowMs: number },
): NewVectorFile {
  return {
    storeId: store.id,
    fileId: file.id,
    owner: store.owner,
    batchId: null,
    filename: file.filename,
    createdMs: how.nowMs,
    attributes: how.attributes,
    chunking: how.chunking,
  };
}

export function storeNotFound(id: string): GatewayError {
  return new GatewayError('vector_store_not_found', { id: id.slice(0, 64) });
}

function fileNotFound(storeId: string, fileId: string): GatewayError {
  return new GatewayError('vector_store_file_not_found', {
    vector_store_id: storeId.slice(0, 64),
    file_id: fileId.slice(0, 64),
  });
}
