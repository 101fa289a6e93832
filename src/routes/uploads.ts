import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PresignService } from '../core/files/presign-service.js';
import type { UploadService } from '../core/files/upload-service.js';
import { GatewayError } from '../errors/gateway-error.js';
import { readMultipart } from '../http/multipart.js';
import { publicOrigin } from '../http/public-origin.js';
import { CALLER_FILE_PURPOSES } from '../wire/openai-files.js';
import { declaredLength, expiresAfter } from './files-routes.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

export interface UploadHandlers {
  create: Handler;
  addPart: Handler;
  complete: Handler;
  cancel: Handler;
  presign: Handler;
  putPresigned: Handler;
}

/** `POST /v1/uploads`: OpenAI's fields, and the gateway's `presign` (docs/files.md). */
export const createUploadSchema = {
  type: 'object',
  required: ['filename', 'purpose', 'bytes', 'mime_type'],
  properties: {
    filename: { type: 'string', minLength: 1, maxLength: 512 },
    purpose: { type: 'string', enum: [...CALLER_FILE_PURPOSES] },
    bytes: { type: 'integer', minimum: 1 },
    mime_type: { type: 'string', minLength: 1, maxLength: 255 },
    expires_after: {
      type: 'object',
      required: ['anchor', 'seconds'],
      properties: { anchor: { type: 'string', enum: ['created_at'] }, seconds: { type: 'integer' } },
    },
    presign: { type: 'boolean' },
  },
} as const;

export const completeUploadSchema = {
  type: 'object',
  required: ['part_ids'],
  properties: {
    part_ids: { type: 'array', maxItems: 100_000, items: { type: 'string', maxLength: 64 } },
    md5: { type: 'string', pattern: '^[0-9a-fA-F]{32}$' },
  },
} as const;

interface CreateBody {
  filename: string;
  purpose: (typeof CALLER_FILE_PURPOSES)[number];
  bytes: number;
  mime_type: string;
  expires_after?: { anchor: string; seconds: number };
  presign?: boolean;
}

const idOf = (request: FastifyRequest): string => {
  const id = (request.params as Record<string, unknown>).id;
  return typeof id === 'string' ? id : '';
};

/** The Uploads API's handlers (docs/files.md); the caller is `request.caller`, set by the route's guard. */
export function makeUploadHandlers(
  uploads: UploadService,
  presigned: PresignService,
  maxPartBytes: number,
): UploadHandlers {
  return {
    async create(request, reply) {
      const body = request.body as CreateBody;
      const seconds = body.expires_after && expiresAfter(body.expires_after.anchor, body.expires_after.seconds);
      // Where the presigned URL points, judged before the upload is made: a bad Host creates nothing.
      const origin = body.presign ? publicOrigin(request) : undefined;
      const upload = await uploads.create(request.caller, {
        filename: body.filename,
        purpose: body.purpose,
        bytes: body.bytes,
        mimeType: body.mime_type,
        ...(seconds === undefined ? {} : { fileTtlSeconds: seconds }),
      });
      if (origin === undefined) return reply.send(upload);
      const url = await presigned.issue(request.caller, upload.id, origin);
      return reply.send({ ...upload, presigned_url: url });
    },
    async addPart(request, reply) {
      const id = idOf(request);
      await uploads.find(request.caller, id); // 404 before any byte is read
      const form = readMultipart(request.raw, {
        fileField: 'data',
        maxFileBytes: maxPartBytes,
        maxParts: 4,
        maxFieldBytes: 1024,
      });
      const part = await form.file;
      return reply.send(await uploads.addPart(request.caller, id, part.content, { sizeHint: declaredLength(request) }));
    },
    async complete(request, reply) {
      const body = request.body as { part_ids: string[]; md5?: string };
      return reply.send(await uploads.complete(request.caller, idOf(request), body.part_ids, body.md5));
    },
    async cancel(request, reply) {
      return reply.send(await uploads.cancel(request.caller, idOf(request)));
    },
    async presign(request, reply) {
      return reply.send(await presigned.issue(request.caller, idOf(request), publicOrigin(request)));
    },
    async putPresigned(request, reply) {
      const { token } = request.params as { token?: string };
      const contentLength = declaredLength(request);
      if (request.headers['transfer-encoding'] !== undefined && contentLength === undefined) {
        throw new GatewayError('presigned_size_mismatch', { header: 'content-length', problem: 'required' });
      }
      const upload = await presigned.put(idOf(request), token ?? '', contentLength, request.raw, (owner) => {
        request.caller = owner;
      });
      return reply.send(upload);
    },
  };
}
