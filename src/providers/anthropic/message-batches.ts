import type { UpstreamConfig } from '../../config/types.js';
import { GatewayError, isGatewayError } from '../../errors/gateway-error.js';
import { objectOf } from '../../wire/json.js';
import { nativeCustomId, resultLines } from '../batch-api.js';
import type {
  ChatRequestBody,
  NativeBatchApi,
  NativeBatchRequest,
  NativeBatchStatus,
  NativeLineResult,
  NativeSubmission,
} from '../provider-contract.js';
import type { UpstreamClient } from '../upstream-client.js';
import { messageBatchResult } from './message-batch-results.js';
import { toAnthropicRequest } from './translate-request.js';

/** The endpoints whose lines go to Message Batches: Messages as they are, chat translated both ways. */
const ENDPOINTS: ReadonlySet<string> = new Set(['/v1/messages', '/v1/chat/completions']);
/** Anthropic's bounds on one batch (docs: "Message Batches", limits): 100,000 requests or 256 MB, first reached. */
export const MAX_BATCH_REQUESTS = 100_000;
export const MAX_BATCH_BYTES = 256 * 1000 * 1000;
/** One results line, at most (a message is bounded like any upstream answer). */
const MAX_RESULT_LINE_BYTES = 32 * 1024 * 1024;
/** The body is sent in pieces of about this size (never whole in memory). */
const CHUNK_CHARS = 64 * 1024;

const RUNNING: ReadonlySet<string> = new Set(['in_progress', 'canceling']);

/**
 * Anthropic's Message Batches API (`POST {base}/messages/batches` with `{requests: [{custom_id, params}]}`, `GET
 * {base}/messages/batches/{id}`, `POST .../{id}/cancel`, `GET .../{id}/results` as JSONL), with the provider's key
 * and headers. Anthropic takes no file: the lines go up in the create's own body, streamed from the store after a
 * first pass has checked every line translates and the whole fits Anthropic's bounds (else a 4xx: the gateway runs
 * the batch itself). Messages lines are sent as they are (`stream` left out); chat lines through the chat
 * translator, and their results back through the response translator. Anthropic's batches carry no metadata, so
 * `find` cannot recover a batch whose create answer was lost (docs/files.md says what that costs).
 */
export class AnthropicMessageBatches implements NativeBatchApi {
  readonly endpoints = ENDPOINTS;

  constructor(
    private readonly http: UpstreamClient,
    private readonly config: UpstreamConfig,
    private readonly headers: () => Record<string, string>,
  ) {}

  async submit(submission: NativeSubmission, signal: AbortSignal): Promise<{ batchId: string }> {
    // The exact length is known from the first pass: sent as Content-Length (no chunked upload of up to 256 MB).
    const length = await this.measure(submission.lines());
    const requestText = (line: NativeBatchRequest) => this.requestText(line);
    async function* body(): AsyncGenerator<Uint8Array> {
      let text = '{"requests":[';
      let first = true;
      for await (const line of submission.lines()) {
        text += `${first ? '' : ','}${requestText(line)}`;
        first = false;
        if (text.length >= CHUNK_CHARS) {
          yield Buffer.from(text);
          text = '';
        }
      }
      yield Buffer.from(`${text}]}`);
    }
    const created = objectOf(await this.json('POST', '/messages/batches', signal, { bytes: body(), length }));
    const id = created?.id;
    if (typeof id !== 'string' || id === '' || id.length > 200) throw this.invalid('the created batch has no id');
    return { batchId: id };
  }

  /**
   * Every line translates, and the create's body stays within Anthropic's bounds: otherwise a 4xx before anything is
   * sent (the engine then runs the batch in the gateway). The body's length in bytes.
   */
  private async measure(lines: AsyncIterable<NativeBatchRequest>): Promise<number> {
    let count = 0;
    let bytes = '{"requests":[]}'.length;
    for await (const line of lines) {
      count += 1;
      bytes += Buffer.byteLength(this.requestText(line)) + (count > 1 ? 1 : 0);
      if (count > MAX_BATCH_REQUESTS || bytes > MAX_BATCH_BYTES)
        throw new GatewayError('batch_input_invalid', {
          field: 'requests',
          problem: `more than Anthropic's Message Batches take in one batch (${MAX_BATCH_REQUESTS} requests or ${MAX_BATCH_BYTES} bytes)`,
        });
    }
    if (count === 0) throw new GatewayError('batch_input_invalid', { field: 'requests', problem: 'no pending line' });
    return bytes;
  }

  /** One request of the create's body: the line's custom id from its index, its params in Anthropic's shape. */
  private requestText(line: NativeBatchRequest): string {
    let params: Record<string, unknown>;
    if (line.endpoint === '/v1/messages') {
      params = { ...line.body };
    } else if (line.endpoint === '/v1/chat/completions') {
      try {
        const body = line.body as unknown as ChatRequestBody;
        params = { ...toAnthropicRequest(body, body.model, this.config.defaultMaxTokens, 'auto') };
      } catch (error) {
        if (isGatewayError(error)) throw error;
        throw new GatewayError('batch_input_invalid', {
          field: `line ${line.index}`,
          problem: 'not a chat request the Anthropic translator reads',
        });
      }
    } else {
      throw new GatewayError('batch_input_invalid', { field: 'endpoint', problem: `${line.endpoint} is not run here` });
    }
    // A batch answers whole messages: Anthropic refuses a streamed request in a batch.
    delete params.stream;
    return JSON.stringify({ custom_id: nativeCustomId(line.index), params });
  }

  /**
   * Anthropic keeps no metadata on a batch and lists none of its requests, so nothing ties an upstream batch to the
   * gateway's: a create whose answer was lost cannot be found again (the engine then creates another).
   */
  find(): Promise<string | undefined> {
    return Promise.resolve(undefined);
  }

  async status(batchId: string, signal: AbortSignal): Promise<NativeBatchStatus> {
    const batch = objectOf(await this.json('GET', this.batchPath(batchId), signal));
    const status = typeof batch?.processing_status === 'string' ? batch.processing_status : '';
    if (RUNNING.has(status)) return { state: 'running', upstreamStatus: status };
    if (status === 'ended') return { state: 'ended', upstreamStatus: status };
    throw this.invalid(`unknown processing_status ${JSON.stringify(status.slice(0, 40))}`);
  }

  /**
   * The results, streamed line by line from the documented results path on the configured upstream (the
   * `results_url` the batch names is not followed: the key goes to no host but the configured one).
   */
  async *results(batchId: string, signal: AbortSignal, endpoint: string): AsyncGenerator<NativeLineResult> {
    const response = await this.http.send(
      { method: 'GET', path: this.path(`${this.batchPath(batchId)}/results`), headers: this.headersFor(false) },
      signal,
      undefined,
    );
    const context = { upstream: this.config.name, secrets: [this.config.apiKey], endpoint };
    yield* resultLines(response, MAX_RESULT_LINE_BYTES, { name: this.config.name, signal }, ({ text }) =>
      messageBatchResult(text, context),
    );
  }

  async cancel(batchId: string, signal: AbortSignal): Promise<void> {
    await this.json('POST', `${this.batchPath(batchId)}/cancel`, signal);
  }

  private batchPath(batchId: string): string {
    return `/messages/batches/${encodeURIComponent(batchId)}`;
  }

  private async json(
    method: 'GET' | 'POST',
    path: string,
    signal: AbortSignal,
    body?: { bytes: AsyncIterable<Uint8Array>; length: number },
  ): Promise<unknown> {
    const headers = this.headersFor(body !== undefined);
    if (body !== undefined) headers['content-length'] = String(body.length);
    const response = await this.http.send(
      { method, path: this.path(path), headers, ...(body !== undefined ? { body: body.bytes } : {}) },
      signal,
      undefined,
    );
    return (await this.http.readJson(response, signal)).value;
  }

  /** The provider's headers (key, `anthropic-version`); a content type only on a request with a body. */
  private headersFor(withBody: boolean): Record<string, string> {
    const headers = this.headers();
    if (!withBody) delete headers['content-type'];
    return headers;
  }

  private path(path: string): string {
    return `${this.http.basePath}${path}`;
  }

  private invalid(reason: string): GatewayError {
    return new GatewayError('upstream_invalid_response', { upstream: this.config.name, reason });
  }
}
