import type { FastifyReply, FastifyRequest } from 'fastify';
import { isOwnId } from '../core/files/file-ids.js';
import { FILE_ID_PREFIX, type StoredFileService } from '../core/files/stored-file-service.js';
import { GatewayError } from '../errors/gateway-error.js';
import { readMultipart } from '../http/multipart.js';
import { CALLER_FILE_PURPOSES, EXPIRES_AFTER_MIN_SECONDS, type CallerFilePurpose } from '../wire/openai-files.js';
import type { FileCreateInput } from '../core/files/file-service.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

export interface FileHandlers {
  create: Handler;
  list: Handler;
  retrieve: Handler;
  content: Handler;
  delete: Handler;
}

/** Parts of `POST /v1/files` at most (file, purpose, expires_after[anchor], expires_after[seconds] and spares). */
const MAX_FORM_PARTS = 16;
const MAX_FIELD_BYTES = 4096;
const MAX_FILENAME = 512;
const MAX_LIST_LIMIT = 10_000;

const isPurpose = (value: string | undefined): value is CallerFilePurpose =>
  (CALLER_FILE_PURPOSES as readonly string[]).includes(value ?? '');

/** `purpose` and `expires_after[...]` of a form, checked (400 `invalid_file_request` naming the field). */
export function formDetails(
  fields: ReadonlyMap<string, string>,
  filename: string,
  mimeType: string,
  nowMs: number,
): Omit<FileCreateInput, 'content'> {
  const purpose = fields.get('purpose');
  if (!isPurpose(purpose)) {
    throw new GatewayError('invalid_file_request', {
      field: 'purpose',
      problem: purpose === undefined ? 'required' : 'not a purpose a caller may upload with',
      allowed: CALLER_FILE_PURPOSES,
    });
  }
  if (filename === '' || filename.length > MAX_FILENAME) {
    throw new GatewayError('invalid_file_request', {
      field: 'file',
      problem: `the file part needs a filename of 1 to ${MAX_FILENAME} characters`,
    });
  }
  const seconds = expiresAfter(fields.get('expires_after[anchor]'), fields.get('expires_after[seconds]'));
  return {
    purpose,
    filename,
    mimeType,
    ...(seconds === undefined ? {} : { expiresAt: Math.floor(nowMs / 1000) + seconds }),
  };
}

/** `expires_after`: both fields or neither; the anchor is `created_at`; whole seconds, at least an hour. */
export function expiresAfter(anchor: string | undefined, seconds: string | number | undefined): number | undefined {
  if (anchor === undefined && seconds === undefined) return undefined;
  if (anchor !== 'created_at') {
    throw new GatewayError('invalid_file_request', { field: 'expires_after[anchor]', allowed: ['created_at'] });
  }
  const value = typeof seconds === 'number' ? seconds : /^\d{1,10}$/.test(seconds ?? '') ? Number(seconds) : NaN;
  if (!Number.isSafeInteger(value) || value < EXPIRES_AFTER_MIN_SECONDS) {
    throw new GatewayError('invalid_file_request', {
      field: 'expires_after[seconds]',
      problem: `whole seconds, at least ${EXPIRES_AFTER_MIN_SECONDS}`,
    });
  }
  return value;
}

/**
 * The request's Content-Length when it sent one (digits only): an upper bound of the file or part inside its body,
 * which the storage quota reserves at once (a refusal comes before the bytes are read).
 */
export function declaredLength(request: FastifyRequest): number | undefined {
  const length = request.headers['content-length'];
  return length !== undefined && /^\d{1,16}$/.test(length) ? Number(length) : undefined;
}

function idOf(request: FastifyRequest): string {
  const id = (request.params as Record<string, unknown>).id;
  return typeof id === 'string' ? id : '';
}

function notFound(id: string): GatewayError {
  return new GatewayError('file_not_found', { id: id.slice(0, 64) });
}

function listQuery(query: Record<string, unknown>) {
  const limitText = query.limit ?? String(MAX_LIST_LIMIT);
  const limit = typeof limitText === 'string' && /^\d{1,5}$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= MAX_LIST_LIMIT)) {
    throw new GatewayError('invalid_query_parameter', { parameter: 'limit', problem: `1 to ${MAX_LIST_LIMIT}` });
  }
  const order = query.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') {
    throw new GatewayError('invalid_query_parameter', { parameter: 'order', allowed: ['asc', 'desc'] });
  }
  for (const name of ['after', 'purpose'] as const) {
    const value = query[name];
    if (value !== undefined && (typeof value !== 'string' || value.length > 128)) {
      throw new GatewayError('invalid_query_parameter', { parameter: name, problem: 'once, at most 128 characters' });
    }
  }
  // A cursor that cannot be a file id (a typo, a batch id) is the caller's mistake: a 400, never some page.
  if (typeof query.after === 'string' && !isOwnId(query.after, FILE_ID_PREFIX)) {
    throw new GatewayError('invalid_query_parameter', {
      parameter: 'after',
      problem: 'must be the id of one of your files (file-<24 letters and digits>)',
    });
  }
  return {
    limit,
    order,
    ...(typeof query.after === 'string' ? { after: query.after } : {}),
    ...(typeof query.purpose === 'string' ? { purpose: query.purpose } : {}),
  } as const;
}

const sizeHintOf = (request: FastifyRequest): { sizeHint?: number } => {
  const length = declaredLength(request);
  return length === undefined ? {} : { sizeHint: length };
};

/** The Files API's handlers (docs/files.md); the caller is `request.caller`, set by the route's guard. */
export function makeFileHandlers(files: StoredFileService, maxFileBytes: number): FileHandlers {
  return {
    async create(request, reply) {
      const form = readMultipart(request.raw, {
        fileField: 'file',
        maxFileBytes,
        maxParts: MAX_FORM_PARTS,
        maxFieldBytes: MAX_FIELD_BYTES,
      });
      const part = await form.file;
      // The fields sent before the file are checked at once; the others once the bytes are in (before any is kept).
      if (part.fields.has('purpose')) formDetails(part.fields, part.filename, part.mimeType, Date.now());
      const object = await files.createDescribed(
        request.caller,
        part.content,
        () => formDetails(part.fields, part.filename, part.mimeType, Date.now()),
        maxFileBytes,
        { ...sizeHintOf(request) },
      );
      return reply.send(object);
    },
    async list(request, reply) {
      return reply.send(await files.list(request.caller, listQuery(request.query as Record<string, unknown>)));
    },
    async retrieve(request, reply) {
      const object = await files.get(request.caller, idOf(request));
      if (!object) throw notFound(idOf(request));
      return reply.send(object);
    },
    async content(request, reply) {
      const opened = await files.openContent(request.caller, idOf(request));
      if (!opened) throw notFound(idOf(request));
      return reply
        .type('application/octet-stream')
        .header('content-length', opened.object.bytes)
        .header('x-content-sha256', opened.object.sha256)
        .send(opened.stream);
    },
    async delete(request, reply) {
      const deleted = await files.delete(request.caller, idOf(request));
      if (!deleted) throw notFound(idOf(request));
      return reply.send(deleted);
    },
  };
}
