import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import type { RateLimitService } from '../core/limits/rate-limit-service.js';
import { OPENAI_ERRORS } from '../http/openai-shape.js';
import type { FileHandlers } from './files-routes.js';
import { requestsOnlyGuard } from './requests-only-guard.js';
import { completeUploadSchema, createUploadSchema, type UploadHandlers } from './uploads.js';

/**
 * OpenAI's Files and Uploads paths (docs/files.md): `/v1/files[...]`, `/v1/uploads[...]`, with the `files` right,
 * the caller's requests-per-window limit (a request with no tokens: like a cached answer), OpenAI's error shape,
 * and the record every observed route gets (usage, metrics: the route `files`). The multipart routes and the
 * presigned PUT read their bodies themselves, as streams: they live in a scope whose only body parser hands the
 * body on unread. The presigned PUT has no credential: its URL is the capability (core/files/presign-service.ts).
 */
export function mountFiles(
  app: FastifyInstance,
  auth: Authenticator,
  limits: RateLimitService,
  handlers: { files: FileHandlers; uploads: UploadHandlers },
): void {
  const onRequest = requestsOnlyGuard(auth, limits, 'files');
  const { files, uploads } = handlers;
  app.get('/v1/files', { onRequest }, files.list);
  app.get('/v1/files/:id', { onRequest }, files.retrieve);
  app.get('/v1/files/:id/content', { onRequest }, files.content);
  app.delete('/v1/files/:id', { onRequest }, files.delete);
  app.post('/v1/uploads', { onRequest, schema: { body: createUploadSchema } }, uploads.create);
  app.post('/v1/uploads/:id/complete', { onRequest, schema: { body: completeUploadSchema } }, uploads.complete);
  app.post('/v1/uploads/:id/cancel', { onRequest }, uploads.cancel);
  app.post('/v1/uploads/:id/presign', { onRequest }, uploads.presign);
  void app.register(async function streamedBodies(scope) {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    scope.post('/v1/files', { onRequest }, files.create);
    scope.post('/v1/uploads/:id/parts', { onRequest }, uploads.addPart);
    const presignedGuard = async function presignedGuard(request: FastifyRequest): Promise<void> {
      request.errorShape = OPENAI_ERRORS;
      request.routeName = 'files';
    };
    scope.put('/v1/uploads/:id/presigned/:token', { onRequest: presignedGuard }, uploads.putPresigned);
  });
}
