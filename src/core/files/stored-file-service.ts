import type { FilesConfig } from '../../config/files-schema.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { ContentTooLarge, type FileStore, type StoredFile } from '../../store/file-contract.js';
import type { FileDeleted, FileList, FileObject, FilePurpose } from '../../wire/openai-files.js';
import type { FileContent, FileCreateInput, FileListQuery, FileService } from './file-service.js';
import { isOwnId, randomId } from './file-ids.js';
import { asDiskFull, type StorageQuota } from './storage-quota.js';

export const FILE_ID_PREFIX = 'file-';

/** OpenAI's file object of a stored file (times in Unix seconds), with the gateway's `sha256`. */
export function fileObject(file: StoredFile): FileObject {
  return {
    id: file.id,
    object: 'file',
    bytes: file.bytes,
    created_at: Math.floor(file.createdMs / 1000),
    expires_at: Math.floor(file.expiresMs / 1000),
    filename: file.filename,
    purpose: file.purpose as FilePurpose,
    status: 'processed',
    status_details: null,
    sha256: file.sha256,
  };
}

/** How a file's bytes meet the storage quotas (storage-quota.ts), when the default does not say it. */
export interface FileWriteOptions {
  /** An upper bound of the file's size (the request's Content-Length): reserved at once, refused before any byte. */
  sizeHint?: number;
  /** False: bytes counted already (an upload's assembled parts). Default: checked, but for the gateway's own files. */
  checked?: boolean;
}

/** The FileService over a FileStore: ids, ages and bounds from the `files` config section. */
export class StoredFileService implements FileService {
  constructor(
    private readonly store: FileStore,
    private readonly config: Pick<FilesConfig, 'maxFileBytes' | 'defaultTtlMs' | 'maxTtlMs'>,
    private readonly now: () => number = Date.now,
    /** Told of each file deleted (at once, never awaited): its upstream copies go too (upstream-file-cleanup.ts). */
    private readonly onDeleted?: (id: string) => void,
    /** The storage quotas every write reserves its bytes against (none: not counted). */
    private readonly quota?: StorageQuota,
  ) {}

  /**
   * A file of purpose `batch_output` is the gateway's own (a batch's results, bounded by the batch the caller was
   * allowed to make): counted against its owner's quota, never refused by it, so a finished batch always gets its
   * results; a full quota refuses the caller's next write instead.
   */
  async create(
    owner: string,
    input: FileCreateInput,
    maxBytes = this.config.maxFileBytes,
    options: FileWriteOptions = {},
  ): Promise<FileObject> {
    const { content, ...details } = input;
    const checked = options.checked ?? details.purpose !== 'batch_output';
    return this.createDescribed(owner, content, () => details, maxBytes, { ...options, checked });
  }

  /**
   * `create` for a producer that knows what the file is only once its bytes are in (a multipart form whose fields
   * follow its file): `describe` is called then, and may throw a GatewayError (nothing is kept).
   */
  async createDescribed(
    owner: string,
    content: AsyncIterable<Uint8Array>,
    describe: () => Omit<FileCreateInput, 'content'>,
    maxBytes = this.config.maxFileBytes,
    options: FileWriteOptions = {},
  ): Promise<FileObject> {
    const id = randomId(FILE_ID_PREFIX);
    const createdMs = this.now();
    const file = () => {
      const input = describe();
      return {
        id,
        owner,
        purpose: input.purpose,
        filename: input.filename,
        mimeType: input.mimeType ?? null,
        createdMs,
        expiresMs: this.expiryOf(
          createdMs,
          input.ttlSeconds === undefined ? input.expiresAt : Math.floor(createdMs / 1000) + input.ttlSeconds,
        ),
      };
    };
    // Reserved before the first byte is stored; the record's insert ends the reservation (its trigger).
    const reservation = await this.quota?.reserve(owner, id, {
      maxBytes,
      checked: options.checked ?? true,
      ...(options.sizeHint === undefined ? {} : { sizeHint: options.sizeHint }),
    });
    try {
      return fileObject(await this.store.put(id, reservation ? reservation.meter(content) : content, maxBytes, file));
    } catch (error) {
      await reservation?.release();
      if (error instanceof ContentTooLarge) {
        throw new GatewayError('file_too_large', { max_bytes: error.maxBytes, field: 'file' });
      }
      throw asDiskFull(error);
    }
  }

  /** The expiry of a file made at `createdMs`: `expiresAt` (Unix seconds) within (created, created + max age]. */
  private expiryOf(createdMs: number, expiresAt: number | undefined): number {
    if (expiresAt === undefined) return createdMs + this.config.defaultTtlMs;
    const expiresMs = expiresAt * 1000;
    if (!Number.isFinite(expiresMs) || expiresMs <= createdMs || expiresMs > createdMs + this.config.maxTtlMs) {
      throw new GatewayError('invalid_file_request', {
        field: 'expires_after',
        problem: `the file must expire within ${Math.floor(this.config.maxTtlMs / 1000)} seconds of its creation`,
      });
    }
    return expiresMs;
  }

  async get(owner: string, id: string): Promise<FileObject | undefined> {
    if (!isOwnId(id, FILE_ID_PREFIX)) return undefined;
    const file = await this.store.get(owner, id, this.now());
    return file ? fileObject(file) : undefined;
  }

  async openContent(owner: string, id: string): Promise<FileContent | undefined> {
    if (!isOwnId(id, FILE_ID_PREFIX)) return undefined;
    const read = await this.store.read(owner, id, this.now());
    return read ? { object: fileObject(read.file), stream: read.stream, mimeType: read.file.mimeType } : undefined;
  }

  async list(owner: string, query: FileListQuery): Promise<FileList> {
    const after = query.after !== undefined && isOwnId(query.after, FILE_ID_PREFIX) ? query.after : undefined;
    const page = await this.store.list(
      owner,
      {
        limit: query.limit,
        order: query.order,
        ...(after === undefined ? {} : { after }),
        ...(query.purpose === undefined ? {} : { purpose: query.purpose }),
      },
      this.now(),
    );
    const data = page.files.map(fileObject);
    return {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data[data.length - 1]?.id ?? null,
      has_more: page.hasMore,
    };
  }

  async delete(owner: string, id: string): Promise<FileDeleted | undefined> {
    if (!isOwnId(id, FILE_ID_PREFIX)) return undefined;
    if (!(await this.store.delete(owner, id, this.now()))) return undefined;
    this.onDeleted?.(id);
    return { id, object: 'file', deleted: true };
  }
}
