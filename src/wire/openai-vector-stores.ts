/**
 * OpenAI's Vector Stores API on the wire (docs/retrieval.md): the objects as the `openai` SDK reads them
 * (`resources/vector-stores/*.d.ts`), and the fields the gateway adds to a store (`embedding_model`, `dimensions`,
 * `metric`, `index`), which OpenAI's clients ignore. Times are Unix seconds.
 */

export type VectorAttributesWire = Record<string, string | number | boolean>;

export interface FileCountsWire {
  in_progress: number;
  completed: number;
  failed: number;
  cancelled: number;
  total: number;
}

export interface VectorStoreObject {
  id: string;
  object: 'vector_store';
  created_at: number;
  name: string;
  usage_bytes: number;
  last_active_at: number | null;
  metadata: Record<string, string> | null;
  status: 'expired' | 'in_progress' | 'completed';
  file_counts: FileCountsWire;
  expires_after: { anchor: 'last_active_at'; days: number } | null;
  expires_at: number | null;
  /** The gateway's: the model its chunks and queries are embedded with. */
  embedding_model: string;
  /** The gateway's: the vectors' dimension (null until the first file is embedded when not declared). */
  dimensions: number | null;
  /** The gateway's: how vectors are compared. */
  metric: 'cosine' | 'dot' | 'euclidean';
  /** The gateway's: how they are searched. */
  index: 'flat' | 'hnsw';
}

export interface ChunkingStrategyWire {
  type: 'static';
  static: { max_chunk_size_tokens: number; chunk_overlap_tokens: number };
}

export interface VectorStoreFileObject {
  id: string;
  object: 'vector_store.file';
  created_at: number;
  vector_store_id: string;
  usage_bytes: number;
  status: 'in_progress' | 'completed' | 'failed' | 'cancelled';
  last_error: { code: 'server_error' | 'unsupported_file' | 'invalid_file'; message: string } | null;
  attributes: VectorAttributesWire;
  chunking_strategy: ChunkingStrategyWire;
}

export interface VectorStoreFileBatchObject {
  id: string;
  object: 'vector_store.files_batch';
  created_at: number;
  vector_store_id: string;
  status: 'in_progress' | 'completed' | 'cancelled' | 'failed';
  file_counts: FileCountsWire;
}

export interface ListPageWire<T> {
  object: 'list';
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export interface SearchResultWire {
  file_id: string;
  filename: string;
  score: number;
  attributes: VectorAttributesWire;
  content: { type: 'text'; text: string }[];
}

export interface SearchPageWire {
  object: 'vector_store.search_results.page';
  search_query: string[];
  data: SearchResultWire[];
  has_more: false;
  next_page: null;
}

export interface FileContentPageWire {
  object: 'vector_store.file_content.page';
  data: { type: 'text'; text: string }[];
  has_more: false;
  next_page: null;
}

export interface DeletedWire {
  id: string;
  object: 'vector_store.deleted' | 'vector_store.file.deleted';
  deleted: true;
}
