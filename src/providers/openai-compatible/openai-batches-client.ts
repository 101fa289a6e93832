import type { UpstreamConfig } from '../../config/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { scrubText } from '../../secrets/redact.js';
import { KeyScrubber } from '../../secrets/key-scrubber.js';
import { objectOf } from '../../wire/json.js';
import type { OpenAiBatchObject, OpenAiBatchOutputLine } from '../../wire/openai-batches.js';
import type {
  NativeBatchApi,
  NativeBatchStatus,
  NativeLineResult,
  NativeSubmission,
  Usage,
} from '../provider-contract.js';
import { indexOfCustomId, nativeCustomId, resultLines } from '../batch-api.js';
import type { UpstreamClient } from '../upstream-client.js';
import { uploadFile } from './openai-files-client.js';
import { countsOf, embeddingUsage, RESPONSES_COUNTS } from '../usage-figures.js';

/** The endpoints OpenAI's Batch API runs (the gateway forwards lines of these as they are). */
const ENDPOINTS: ReadonlySet<string> = new Set(['/v1/chat/completions', '/v1/embeddings', '/v1/responses']);
/** One line of an output or error file, at most (an answer is bounded like any upstream answer). */
const MAX_RESULT_LINE_BYTES = 32 * 1024 * 1024;
/** Batches listed per page when looking for one created before a crash, and pages looked at. */
const FIND_PAGE = 100;
const FIND_PAGES = 5;
/** The metadata key that names the gateway's batch in the upstream's. */
export const GATEWAY_BATCH_KEY = 'gateway_batch_id';

const RUNNING: ReadonlySet<string> = new Set(['validating', 'in_progress', 'finalizing', 'cancelling']);
const ENDED: ReadonlySet<string> = new Set(['completed', 'expired', 'cancelled']);

/**
 * OpenAI's Batch API (and a server that speaks it: `batch: native` on an OpenAI-compatible upstream): the lines go
 * up as a JSONL file (`POST /files`, purpose `batch`, streamed from the store: never whole in memory), the batch is
 * created over it with the gateway's batch id in its metadata, polled (`GET /batches/{id}`), and its output and
 * error files read back line by line. Lines are forwarded in the caller's own format (the endpoints are OpenAI's),
 * so a result's body is the upstream's answer as it came, with any key it repeats scrubbed.
 */
export class OpenAiBatches implements NativeBatchApi {
  readonly endpoints = ENDPOINTS;

  constructor(
    private readonly http: UpstreamClient,
    private readonly config: UpstreamConfig,
    private readonly headers: (json: boolean) => Record<string, string>,
  ) {}

  async submit(submission: NativeSubmission, signal: AbortSignal): Promise<{ batchId: string; fileId?: string }> {
    let fileId = submission.uploadedFileId;
    if (fileId === undefined) {
      fileId = await this.upload(submission, signal);
      await submission.onUploaded(fileId);
    }
    const created = await this.json(
      'POST',
      '/batches',
      signal,
      JSON.stringify({
        input_file_id: fileId,
        endpoint: submission.endpoint,
        completion_window: '24h',
        metadata: { [GATEWAY_BATCH_KEY]: submission.gatewayBatchId },
      }),
    );
    const id = objectOf(created)?.id;
    if (typeof id !== 'string' || id === '') throw this.invalid('the created batch has no id');
    return { batchId: id, fileId };
  }

  /** The input file, streamed into the upload: one JSONL line per pending line, `custom_id` from its index. */
  private upload(submission: NativeSubmission, signal: AbortSignal): Promise<string> {
    async function* jsonl(): AsyncGenerator<Uint8Array> {
      let text = '';
      for await (const line of submission.lines()) {
        const request = { custom_id: nativeCustomId(line.index), method: 'POST', url: line.endpoint, body: line.body };
        text += `${JSON.stringify(request)}\n`;
        if (text.length >= 64 * 1024) {
          yield Buffer.from(text);
          text = '';
        }
      }
      if (text !== '') yield Buffer.from(text);
    }
    return uploadFile(
      this.http,
      this.config.name,
      {
        fields: [['purpose', 'batch']],
        filename: `${submission.gatewayBatchId}.jsonl`,
        mimeType: 'application/jsonl',
        content: jsonl(),
      },
      { headers: this.headers(false), signal, apiKeyOverride: undefined },
    );
  }

  async find(gatewayBatchId: string, signal: AbortSignal): Promise<string | undefined> {
    let after: string | undefined;
    for (let page = 0; page < FIND_PAGES; page++) {
      const query = `?limit=${FIND_PAGE}${after === undefined ? '' : `&after=${encodeURIComponent(after)}`}`;
      const list = objectOf(await this.json('GET', `/batches${query}`, signal));
      const data = Array.isArray(list?.data) ? list.data : [];
      for (const item of data) {
        const batch = objectOf(item);
        if (objectOf(batch?.metadata)?.[GATEWAY_BATCH_KEY] === gatewayBatchId && typeof batch?.id === 'string')
          return batch.id;
      }
      const last = objectOf(data[data.length - 1])?.id;
      if (list?.has_more !== true || typeof last !== 'string') return undefined;
      after = last;
    }
    return undefined;
  }

  async status(batchId: string, signal: AbortSignal): Promise<NativeBatchStatus> {
    const batch = objectOf(await this.json('GET', `/batches/${encodeURIComponent(batchId)}`, signal)) as
      Partial<OpenAiBatchObject> | undefined;
    const status = typeof batch?.status === 'string' ? batch.status : '';
    if (RUNNING.has(status)) return { state: 'running', upstreamStatus: status };
    if (ENDED.has(status)) return { state: 'ended', upstreamStatus: status };
    if (status === 'failed') {
      const first = Array.isArray(batch?.errors?.data) ? objectOf(batch.errors.data[0]) : undefined;
      const reason = typeof first?.message === 'string' ? this.scrub(first.message).slice(0, 500) : undefined;
      return { state: 'failed', upstreamStatus: status, ...(reason ? { reason } : {}) };
    }
    throw this.invalid(`unknown batch status ${JSON.stringify(status.slice(0, 40))}`);
  }

  async *results(batchId: string, signal: AbortSignal): AsyncGenerator<NativeLineResult> {
    const batch = objectOf(await this.json('GET', `/batches/${encodeURIComponent(batchId)}`, signal)) as
      Partial<OpenAiBatchObject> | undefined;
    const endpoint = typeof batch?.endpoint === 'string' ? batch.endpoint : '/v1/chat/completions';
    for (const fileId of [batch?.output_file_id, batch?.error_file_id]) {
      if (typeof fileId !== 'string' || fileId === '') continue;
      const response = await this.http.send(
        {
          method: 'GET',
          path: this.path(`/files/${encodeURIComponent(fileId)}/content`),
          headers: this.headers(false),
        },
        signal,
        undefined,
      );
      yield* resultLines(response, MAX_RESULT_LINE_BYTES, { name: this.config.name, signal }, ({ text }) =>
        this.resultOf(text, endpoint),
      );
    }
  }

  async cancel(batchId: string, signal: AbortSignal): Promise<void> {
    await this.json('POST', `/batches/${encodeURIComponent(batchId)}/cancel`, signal, '{}');
  }

  async cleanUp(fileId: string, signal: AbortSignal): Promise<void> {
    const response = await this.http.send(
      { method: 'DELETE', path: this.path(`/files/${encodeURIComponent(fileId)}`), headers: this.headers(false) },
      signal,
      undefined,
    );
    await response.body.dump();
  }

  /** One output or error line as the line's result; undefined for a line that names no line of ours. */
  private resultOf(text: string, endpoint: string): NativeLineResult | undefined {
    let line: Partial<OpenAiBatchOutputLine> | undefined;
    try {
      line = objectOf(JSON.parse(text)) as Partial<OpenAiBatchOutputLine> | undefined;
    } catch {
      return undefined;
    }
    const index = indexOfCustomId(line?.custom_id);
    if (index === undefined) return undefined;
    const response = objectOf(line?.response);
    const code = response?.status_code;
    const requestId = typeof response?.request_id === 'string' ? response.request_id.slice(0, 200) : null;
    if (response && typeof code === 'number' && Number.isInteger(code) && code >= 100 && code <= 599) {
      const body = response.body;
      const ok = code >= 200 && code < 300;
      const usage = ok ? usageOf(objectOf(body)?.usage, endpoint) : undefined;
      return { index, status: code, body: this.scrubAnswer(JSON.stringify(body ?? null)), usage, requestId };
    }
    const error = objectOf(line?.error);
    const message = typeof error?.message === 'string' ? error.message.slice(0, 1000) : 'the upstream gave no answer';
    const failure = {
      code: 'upstream_error',
      message: this.scrub(message),
      details: {
        upstream: this.config.name,
        upstream_code: typeof error?.code === 'string' ? error.code.slice(0, 100) : null,
      },
    };
    return { index, status: 502, body: JSON.stringify(failure), usage: undefined, requestId };
  }

  private async json(method: 'GET' | 'POST', path: string, signal: AbortSignal, body?: string): Promise<unknown> {
    const response = await this.http.send(
      {
        method,
        path: this.path(path),
        headers: this.headers(body !== undefined),
        ...(body !== undefined ? { body } : {}),
      },
      signal,
      undefined,
    );
    return (await this.http.readJson(response, signal)).value;
  }

  private path(path: string): string {
    return `${this.http.basePath}${path}`;
  }

  private scrub(text: string): string {
    return scrubText(text, [this.config.apiKey]);
  }

  /** A line's answer: only the batch's key looked for (key-scrubber.ts), whatever the answer's size. */
  private scrubAnswer(json: string): string {
    return KeyScrubber.of([this.config.apiKey])?.scrub(json) ?? json;
  }

  private invalid(reason: string): GatewayError {
    return new GatewayError('upstream_invalid_response', { upstream: this.config.name, reason });
  }
}

/** A 2xx body's usage, checked: chat's and embeddings' counts, or the Responses API's. */
function usageOf(value: unknown, endpoint: string): Usage | undefined {
  if (endpoint === '/v1/responses') return countsOf(value, RESPONSES_COUNTS);
  const usage = countsOf(value);
  return usage && endpoint === '/v1/embeddings' ? embeddingUsage(usage) : usage;
}
