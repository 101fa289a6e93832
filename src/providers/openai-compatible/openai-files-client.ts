import { randomBytes } from 'node:crypto';
import { GatewayError } from '../../errors/gateway-error.js';
import type { CallContext, UpstreamFileUpload, UpstreamFiles } from '../provider-contract.js';
import type { UpstreamClient } from '../upstream-client.js';

/** OpenAI's bounds on a file's `expires_after[seconds]` (one hour to 30 days). */
const MIN_TTL_SECONDS = 3_600;
const MAX_TTL_SECONDS = 30 * 24 * 3_600;

/**
 * OpenAI's Files API for a file a request names (https://platform.openai.com/docs/api-reference/files/create):
 * `POST {base}/files`, multipart/form-data with `purpose=user_data`, an expiry, and the file's bytes streamed from
 * the gateway's store (never whole in memory). Sent with the call's key only: the upstream's, never a caller's
 * gateway credentials (the headers are the provider's own, built from its key).
 */
export class OpenAiFiles implements UpstreamFiles {
  constructor(
    private readonly http: UpstreamClient,
    private readonly upstream: string,
    private readonly headers: (context: CallContext) => Record<string, string>,
  ) {}

  async upload(file: UpstreamFileUpload, context: CallContext): Promise<string> {
    const ttl = Math.min(MAX_TTL_SECONDS, Math.max(MIN_TTL_SECONDS, Math.floor(file.ttlSeconds)));
    return uploadFile(
      this.http,
      this.upstream,
      {
        fields: [
          ['purpose', 'user_data'],
          ['expires_after[anchor]', 'created_at'],
          ['expires_after[seconds]', String(ttl)],
        ],
        filename: file.filename,
        mimeType: file.mimeType,
        content: file.content,
      },
      { headers: this.headers(context), signal: context.signal, apiKeyOverride: context.apiKeyOverride },
    );
  }

  /**
   * `DELETE {base}/files/{id}` (https://platform.openai.com/docs/api-reference/files/delete): answered with
   * `{"id", "object": "file", "deleted": true}`. A 404 means the upstream has no such file (expired, deleted
   * before): what was asked. A 2xx whose body is not that object, or says `deleted: false`, is a failure.
   */
  async delete(upstreamFileId: string, context: CallContext): Promise<void> {
    const request = {
      method: 'DELETE' as const,
      path: `${this.http.basePath}/files/${encodeURIComponent(upstreamFileId)}`,
      headers: this.headers(context),
    };
    let value: unknown;
    try {
      const response = await this.http.send(request, context.signal, context.apiKeyOverride);
      ({ value } = await this.http.readJson(response, context.signal));
    } catch (error) {
      if (error instanceof GatewayError && error.details.upstream_status === 404) return;
      throw error;
    }
    if ((value as { deleted?: unknown } | null)?.deleted !== true)
      throw new GatewayError('upstream_invalid_response', {
        upstream: this.upstream,
        reason: 'the file delete answer does not say deleted: true',
      });
  }
}

/**
 * `POST {base}/files` as multipart/form-data: the form's fields, then the file's bytes streamed as they come (never
 * whole in memory). Returns the upstream's file id (`upstream_invalid_response` when it gives none). Used for a file
 * a request names (above) and for a batch's input file (openai-batches.ts).
 */
export async function uploadFile(
  http: UpstreamClient,
  upstream: string,
  form: {
    fields: ReadonlyArray<readonly [name: string, value: string]>;
    filename: string;
    mimeType: string;
    content: AsyncIterable<Uint8Array>;
  },
  call: { headers: Record<string, string>; signal: AbortSignal; apiKeyOverride: string | undefined },
): Promise<string> {
  const boundary = `----llmgw${randomBytes(12).toString('hex')}`;
  const field = ([name, value]: readonly [string, string]) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head =
    form.fields.map(field).join('') +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${safeFilename(form.filename)}"\r\n` +
    `Content-Type: ${safeMimeType(form.mimeType)}\r\n\r\n`;
  async function* body(): AsyncGenerator<Uint8Array> {
    yield Buffer.from(head);
    yield* form.content;
    yield Buffer.from(`\r\n--${boundary}--\r\n`);
  }
  const headers = { ...call.headers, 'content-type': `multipart/form-data; boundary=${boundary}` };
  const response = await http.send(
    { method: 'POST', path: `${http.basePath}/files`, headers, body: body() },
    call.signal,
    call.apiKeyOverride,
  );
  const { value } = await http.readJson(response, call.signal);
  const id = (value as { id?: unknown } | null)?.id;
  if (typeof id !== 'string' || id === '' || id.length > 256)
    throw new GatewayError('upstream_invalid_response', { upstream, reason: 'the uploaded file has no id' });
  return id;
}

/** A filename fit for a quoted Content-Disposition parameter (RFC 7578 §4.2): no quote, backslash or line break. */
function safeFilename(name: string): string {
  const cleaned = name.replace(/["\\\r\n]/g, '_').slice(0, 255);
  return cleaned === '' ? 'file' : cleaned;
}

function safeMimeType(type: string): string {
  return /^[\w.+-]+\/[\w.+-]+$/.test(type) ? type : 'application/octet-stream';
}
