import { createHash } from 'node:crypto';
import { GatewayError } from '../../errors/gateway-error.js';
import type { CallContext, Provider, UpstreamFiles } from '../../providers/provider-contract.js';
import type { ForwardedFileStore } from '../../store/file-contract.js';
import type { FileObject } from '../../wire/openai-files.js';
import type { FileService } from './file-service.js';
import type { UpstreamFileCleanup } from './upstream-file-cleanup.js';
import { findFileRefs, mayNameFiles, replaceAt, type FileRef } from './file-refs.js';
import { mediaTypeOf } from './media-type.js';

/** File references one request may carry (each occurrence counts). */
export const MAX_FILES_PER_REQUEST = 10;
/**
 * Bytes a request may carry inline to a translated upstream, all its files together (before base64): Gemini's
 * inline limit for a whole request (20 MB), and well under Anthropic's 32 MB request bound once encoded.
 */
export const MAX_INLINE_BYTES = 20 * 1024 * 1024;

export interface FileForwardingOptions {
  files: FileService;
  store: ForwardedFileStore;
  maxFiles?: number;
  maxInlineBytes?: number;
  now?: () => number;
  /** Told when an upload ends after its file was deleted, so that copy goes too. */
  cleanup?: Pick<UpstreamFileCleanup, 'fileDeleted'>;
}

/**
 * The gateway's files in model requests (docs/files.md, "Files in requests: forwarded to the upstream"). A request
 * that names one of the caller's files by its gateway id gets it made available to each upstream it is sent to:
 * uploaded once to an upstream that has a Files API (`Provider.files`) and the id rewritten to the upstream's (the
 * mapping kept in the store and reused), or put inline as a chat `file` part's `file_data` for one that has not
 * (the provider translates that into its own format: Anthropic's `document`, Gemini's `inlineData`).
 *
 * Off the hot path: `named` is synchronous and answers undefined after one substring search of the body's bytes
 * when they cannot name a gateway file; only a request that does pays for the walk, the look-ups and the uploads.
 */
export class FileForwarding {
  readonly maxFiles: number;
  readonly maxInlineBytes: number;
  private readonly now: () => number;
  /** Uploads under way, by file, content and upstream account: concurrent requests share one. */
  private readonly inFlight = new Map<string, Promise<string>>();

  constructor(private readonly options: FileForwardingOptions) {
    this.maxFiles = options.maxFiles ?? MAX_FILES_PER_REQUEST;
    this.maxInlineBytes = options.maxInlineBytes ?? MAX_INLINE_BYTES;
    this.now = options.now ?? Date.now;
  }

  /** The places the body names gateway files; undefined (at once, for most requests) when it names none. */
  named(body: object, rawBody: string | undefined): FileRef[] | undefined {
    if (!mayNameFiles(rawBody)) return undefined;
    const refs = findFileRefs(body, this.maxFiles);
    return refs.length === 0 ? undefined : refs;
  }

  /**
   * Checks that every named file is the caller's live file (404 `file_not_found` naming where, before anything
   * goes upstream) and that there are not too many.
   */
  async resolve(body: object, refs: FileRef[], owner: string): Promise<NamedFiles> {
    if (refs.length > this.maxFiles) {
      const extra = refs[this.maxFiles] as FileRef;
      throw new GatewayError('file_not_forwardable', {
        field: extra.field,
        file_id: extra.id,
        problem: `a request may name at most ${this.maxFiles} of the gateway's files`,
        max_files: this.maxFiles,
      });
    }
    const objects = new Map<string, FileObject>();
    for (const ref of refs) {
      if (objects.has(ref.id)) continue;
      const object = await this.options.files.get(owner, ref.id);
      if (!object) throw new GatewayError('file_not_found', { id: ref.id, field: ref.field });
      objects.set(ref.id, object);
    }
    return new NamedFiles(this, owner, refs, objects, body);
  }

  /** The upstream's id of the file (uploaded now, or earlier and remembered). */
  async forward(owner: string, file: FileObject, files: UpstreamFiles, provider: string, context: CallContext) {
    const account = accountOf(provider, context.apiKeyOverride);
    const known = await this.options.store.lookup(file.id, file.sha256, account, this.now());
    if (known !== undefined) return known;
    const key = `${file.id}\n${file.sha256}\n${account}`;
    const shared = this.inFlight.get(key);
    if (shared) {
      // Another request is uploading it: its id is this one's too; if that upload failed (its caller left, say),
      // this request tries its own.
      const id = await shared.catch(() => undefined);
      if (id !== undefined) return id;
    }
    const upload = this.upload(owner, file, files, account, context).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, upload);
    return upload;
  }

  private async upload(
    owner: string,
    file: FileObject,
    files: UpstreamFiles,
    account: string,
    context: CallContext,
  ): Promise<string> {
    const content = await this.options.files.openContent(owner, file.id);
    if (!content) throw new GatewayError('file_not_found', { id: file.id });
    const nowMs = this.now();
    // Every gateway file has an expiry (docs/files.md); a missing one is taken as a day.
    const expiresAt = file.expires_at ?? Math.floor(nowMs / 1000) + 86_400;
    const ttlSeconds = Math.max(1, expiresAt - Math.floor(nowMs / 1000));
    let upstreamFileId: string;
    try {
      upstreamFileId = await files.upload(
        {
          filename: file.filename,
          bytes: file.bytes,
          mimeType: content.mimeType ?? 'application/octet-stream',
          content: content.stream,
          ttlSeconds,
        },
        context,
      );
    } finally {
      content.stream.destroy();
    }
    // Reused while the gateway's file lives (the upstream keeps its copy at least that long: OpenAiFiles).
    await this.options.store.record({
      fileId: file.id,
      sha256: file.sha256,
      upstream: account,
      upstreamFileId,
      createdMs: nowMs,
      expiresMs: expiresAt * 1000,
    });
    // The caller may have deleted the file while it went up: its delete found no mapping then, so this copy is
    // deleted now (the request that uploaded it still uses it). A failed look-up is not this request's failure.
    const { cleanup } = this.options;
    if (cleanup && !(await this.options.files.get(owner, file.id).then(Boolean, () => true)))
      cleanup.fileDeleted(file.id);
    return upstreamFileId;
  }

  /** The file's bytes, at most `maxBytes` (it was checked against its recorded size already). */
  async read(owner: string, file: FileObject): Promise<{ bytes: Buffer; mimeType: string | null | undefined }> {
    const content = await this.options.files.openContent(owner, file.id);
    if (!content) throw new GatewayError('file_not_found', { id: file.id });
    const parts: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of content.stream as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > this.maxInlineBytes)
          throw new GatewayError('file_not_forwardable', {
            file_id: file.id,
            problem: 'larger than can be sent inline',
            max_bytes: this.maxInlineBytes,
          });
        parts.push(chunk);
      }
    } finally {
      content.stream.destroy();
    }
    return { bytes: Buffer.concat(parts), mimeType: content.mimeType };
  }
}

/** The upstream account a file is uploaded to: the upstream, or the caller's own key there (another account). */
function accountOf(upstream: string, override: string | undefined): string {
  if (override === undefined) return upstream;
  return `${upstream}#key:${createHash('sha256').update(override).digest('hex').slice(0, 32)}`;
}

/** One request's named files, resolved: the body each target gets. */
export class NamedFiles {
  /** Inline parts already read (a fallback target reuses them). */
  private readonly inline = new Map<string, Record<string, unknown>>();

  constructor(
    private readonly forwarding: FileForwarding,
    private readonly owner: string,
    private readonly refs: readonly FileRef[],
    private readonly objects: ReadonlyMap<string, FileObject>,
    /** The body the refs were found in. */
    private readonly body: object,
  ) {}

  /**
   * The body for one upstream: with each gateway file id rewritten to the upstream's (a provider with a Files
   * API), or each chat file part carrying its file inline (`chat`: the body is a chat request; a translating
   * provider reads `file_data`). A native body naming a file for an upstream without a Files API is refused.
   */
  async bodyFor<T extends object>(body: T, provider: Provider, context: CallContext, chat: boolean): Promise<T> {
    let out = body;
    const { files } = provider;
    if (files) {
      for (const ref of this.refs) {
        const id = await this.forwarding.forward(this.owner, this.object(ref), files, provider.name, context);
        out = replaceAt(out, ref.keys, () => id);
      }
      return out;
    }
    let total = 0;
    for (const ref of this.refs) {
      const object = this.object(ref);
      if (!chat || !ref.chatFilePart)
        throw refusal(
          ref,
          `the upstream "${provider.name}" has no Files API the gateway uploads to, and only a chat file part can carry a file inline`,
        );
      total += object.bytes;
      if (total > this.forwarding.maxInlineBytes)
        throw refusal(
          ref,
          `files sent inline to "${provider.name}" may hold ${this.forwarding.maxInlineBytes} bytes together`,
          {
            max_bytes: this.forwarding.maxInlineBytes,
          },
        );
      const inline = await this.inlineOf(object);
      out = replaceAt(out, ref.keys.slice(0, -1), (old) => {
        const { file_id: _id, ...rest } = (old ?? {}) as Record<string, unknown>;
        return { ...rest, ...inline, filename: typeof rest.filename === 'string' ? rest.filename : object.filename };
      });
    }
    return out;
  }

  /** The same files, at their places in `body` (the request after its context window was fitted: turns dropped). */
  on(body: object): NamedFiles {
    if (body === this.body) return this;
    return new NamedFiles(this.forwarding, this.owner, findFileRefs(body, this.refs.length), this.objects, body);
  }

  private object(ref: FileRef): FileObject {
    return this.objects.get(ref.id) as FileObject;
  }

  private async inlineOf(object: FileObject): Promise<Record<string, unknown>> {
    const known = this.inline.get(object.id);
    if (known) return known;
    const { bytes, mimeType } = await this.forwarding.read(this.owner, object);
    const part = {
      file_data: `data:${mediaTypeOf(bytes, mimeType, object.filename)};base64,${bytes.toString('base64')}`,
    };
    this.inline.set(object.id, part);
    return part;
  }
}

function refusal(ref: FileRef, problem: string, extra: Record<string, unknown> = {}): GatewayError {
  return new GatewayError('file_not_forwardable', { field: ref.field, file_id: ref.id, problem, ...extra });
}
