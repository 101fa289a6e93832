import type { Dispatcher } from 'undici';
import { GatewayError, isGatewayError } from '../../errors/gateway-error.js';
import { scrubCut } from '../../secrets/redact.js';
import { nativeCustomId, resultLines } from '../batch-api.js';
import type {
  ChatRequestBody,
  NativeBatchApi,
  NativeBatchStatus,
  NativeLineResult,
  NativeSubmission,
} from '../provider-contract.js';
import type { UpstreamClient } from '../upstream-client.js';
import type {
  GeminiBatch,
  GeminiBatchFileLine,
  GeminiBatchList,
  GeminiBatchOperation,
  GeminiBatchOutput,
  GeminiInlinedRequest,
  GeminiRpcStatus,
} from '../../wire/gemini-batch.js';
import { isJsonObject, received, type Received } from '../../wire/received.js';
import { chatLineResult, indexOf, type ResultContext } from './gemini-batch-results.js';
import { toGeminiRequest } from './translate-request.js';

const CHAT = '/v1/chat/completions';
/** Google's bound on a `batchGenerateContent` request with inline requests is 20 MB; the gateway stays under it. */
export const MAX_INLINE_BATCH_BYTES = 19_000_000;
/** A line of a responses file longer than this is not read (its line ends as unanswered). */
const MAX_RESULT_LINE_BYTES = 16 * 1024 * 1024;
/** `find` reads at most this many pages of the upstream's batches (100 each), newest first. */
const MAX_LIST_PAGES = 20;
const BATCH_NAME = /^batches\/[A-Za-z0-9_-]{1,200}$/;
const FILE_NAME = /^files\/[A-Za-z0-9_-]{1,200}$/;

export interface GeminiBatchesOptions {
  name: string;
  http: UpstreamClient;
  /** The upstream's headers with the configured key (`x-goog-api-key`): a batch is the gateway's, not a caller's key. */
  headers(): Record<string, string>;
  secrets: ReadonlyArray<string | undefined>;
  /** Bytes the create request may have (tests make it small). */
  maxInlineBytes?: number;
}

/** The upstream batch's name for a gateway batch: `find` lists the upstream's batches and matches it. */
export function displayNameOf(gatewayBatchId: string): string {
  return `llmgw:${gatewayBatchId}`;
}

/**
 * Gemini's Batch API (half the price of `generateContent`) behind the gateway's native batch contract. A batch is one
 * `POST models/{model}:batchGenerateContent` with inline requests (each chat line translated by the interactive
 * path's translator, keyed `line-<index>`), polled with `GET batches/{id}` and cancelled with
 * `POST batches/{id}:cancel`; each answer is translated back into a `chat.completion` by the interactive path's
 * translator. What it cannot forward is refused with a 4xx from `submit` (the gateway then runs the lines itself):
 * lines of several upstream models (a Gemini batch has one), a body of more than ~19 MB (no upload of an input file
 * through the Files API), a line the translator refuses.
 */
export class GeminiBatches implements NativeBatchApi {
  readonly endpoints: ReadonlySet<string> = new Set([CHAT]);
  private readonly maxInlineBytes: number;

  constructor(private readonly options: GeminiBatchesOptions) {
    this.maxInlineBytes = options.maxInlineBytes ?? MAX_INLINE_BATCH_BYTES;
  }

  async submit(submission: NativeSubmission, signal: AbortSignal): Promise<{ batchId: string }> {
    if (submission.endpoint !== CHAT) throw refused('endpoint', `Gemini's batches run ${CHAT} only`);
    const { model, requests } = await this.inlineRequests(submission);
    const displayName = JSON.stringify(displayNameOf(submission.gatewayBatchId));
    // Written by hand around the requests already serialised (each once), so the size was known before sending.
    const body = `{"batch":{"displayName":${displayName},"inputConfig":{"requests":{"requests":[${requests.join(',')}]}}}}`;
    const path = `${this.options.http.basePath}/models/${encodeURIComponent(model)}:batchGenerateContent`;
    const value = await this.json(await this.send('POST', path, signal, body), signal);
    const name = batchNameOf(value);
    if (name === undefined) throw this.invalid('the created batch has no name batches/<id>');
    return { batchId: name };
  }

  /** Every line as an inline request, serialised; refuses several models, a line it cannot translate, too many bytes. */
  private async inlineRequests(submission: NativeSubmission): Promise<{ model: string; requests: string[] }> {
    let model: string | undefined;
    let bytes = 0;
    const requests: string[] = [];
    for await (const line of submission.lines()) {
      const lineModel = typeof line.body.model === 'string' ? line.body.model.replace(/^models\//, '') : '';
      if (model === undefined) model = lineModel;
      else if (lineModel !== model)
        throw refused('model', `a Gemini batch has one model; its lines name ${model} and ${lineModel.slice(0, 100)}`);
      const inlined: GeminiInlinedRequest = {
        request: translated(line.body, line.index),
        metadata: { key: nativeCustomId(line.index) },
      };
      const text = JSON.stringify(inlined);
      bytes += Buffer.byteLength(text) + 1;
      if (bytes > this.maxInlineBytes)
        throw new GatewayError('payload_too_large', {
          limit_bytes: this.maxInlineBytes,
          reason: "the batch's requests are larger than Gemini takes inline",
        });
      requests.push(text);
    }
    if (model === undefined || model === '') throw refused('model', 'the batch has no lines, or a line names no model');
    return { model, requests };
  }

  async find(gatewayBatchId: string, signal: AbortSignal): Promise<string | undefined> {
    const wanted = displayNameOf(gatewayBatchId);
    let token: string | undefined;
    const seen = new Set<string>();
    for (let page = 0; page < MAX_LIST_PAGES; page += 1) {
      const query = `pageSize=100${token === undefined ? '' : `&pageToken=${encodeURIComponent(token)}`}`;
      const path = `${this.options.http.basePath}/batches?${query}`;
      const list = received<GeminiBatchList>(await this.json(await this.send('GET', path, signal), signal));
      const operations: unknown[] = Array.isArray(list?.operations) ? list.operations : [];
      for (const operation of operations) {
        if (batchOf(operation)?.displayName === wanted) return batchNameOf(operation);
      }
      const next = list?.nextPageToken;
      if (typeof next !== 'string' || next === '' || seen.has(next)) return undefined;
      seen.add(next);
      token = next;
    }
    return undefined;
  }

  async status(batchId: string, signal: AbortSignal): Promise<NativeBatchStatus> {
    const operation = await this.operation(batchId, signal);
    const state = stateOf(operation);
    const error = received<GeminiRpcStatus>(operation.error);
    if (state === 'PENDING' || state === 'RUNNING') return { state: 'running', upstreamStatus: `BATCH_STATE_${state}` };
    if (state === 'SUCCEEDED' || state === 'CANCELLED' || state === 'EXPIRED')
      return { state: 'ended', upstreamStatus: `BATCH_STATE_${state}` };
    const reason = typeof error?.message === 'string' ? scrubCut(error.message, this.options.secrets, 500) : undefined;
    if (state === 'FAILED' || (operation.done === true && error))
      return {
        state: 'failed',
        upstreamStatus: state === 'FAILED' ? 'BATCH_STATE_FAILED' : 'done',
        ...(reason ? { reason } : {}),
      };
    // A state it does not know (or none): still running as far as the gateway can tell; its window ends it.
    return {
      state: 'running',
      upstreamStatus: state !== undefined && /^[A-Z_]{1,50}$/.test(state) ? state : 'unknown',
    };
  }

  async *results(batchId: string, signal: AbortSignal): AsyncGenerator<NativeLineResult> {
    const operation = await this.operation(batchId, signal);
    const batch = batchOf(operation);
    const model = typeof batch?.model === 'string' ? batch.model.replace(/^models\//, '').slice(0, 200) : 'gemini';
    const context: ResultContext = { upstream: this.options.name, model, secrets: this.options.secrets };
    const output = received<GeminiBatchOutput>(operation.response) ?? received<GeminiBatchOutput>(batch?.output);
    if (!output) return;
    const inlined = output.inlinedResponses;
    // `{inlinedResponses: {inlinedResponses: [...]}}` as Google nests it; a bare array is read too.
    const items: unknown = isJsonObject(inlined) ? inlined.inlinedResponses : inlined;
    if (Array.isArray(items)) {
      for (const [position, item] of (items as unknown[]).entries()) {
        const index = indexOf(isJsonObject(item) ? objectKey(item.metadata) : undefined, position);
        if (index !== undefined) yield chatLineResult(index, item, context);
      }
      return;
    }
    if (typeof output.responsesFile === 'string' && FILE_NAME.test(output.responsesFile))
      yield* this.fileResults(output.responsesFile, context, signal);
  }

  /** A responses file (JSONL, one `{key, response | error}` per request in order), read as a stream. */
  private async *fileResults(
    file: string,
    context: ResultContext,
    signal: AbortSignal,
  ): AsyncGenerator<NativeLineResult> {
    const path = `/download${this.options.http.basePath}/${file}:download?alt=media`;
    const response = await this.send('GET', path, signal);
    // Lines in request order.
    yield* resultLines(response, MAX_RESULT_LINE_BYTES, { name: this.options.name, signal }, ({ number, text }) => {
      let line: unknown;
      try {
        line = JSON.parse(text);
      } catch {
        line = undefined;
      }
      const index = indexOf(received<GeminiBatchFileLine>(line)?.key, number - 1);
      return index === undefined ? undefined : chatLineResult(index, line, context);
    });
  }

  async cancel(batchId: string, signal: AbortSignal): Promise<void> {
    const path = `${this.options.http.basePath}/${checkedName(batchId)}:cancel`;
    const response = await this.send('POST', path, signal, '{}');
    await this.json(response, signal).catch(() => undefined); // `{}`; its body says nothing the poll will not
  }

  private async operation(batchId: string, signal: AbortSignal): Promise<Received<GeminiBatchOperation>> {
    const path = `${this.options.http.basePath}/${checkedName(batchId)}`;
    const operation = received<GeminiBatchOperation>(await this.json(await this.send('GET', path, signal), signal));
    if (!operation) throw this.invalid('the batch is not a JSON object');
    return operation;
  }

  private send(method: 'GET' | 'POST', path: string, signal: AbortSignal, body?: string) {
    return this.options.http.send({ method, path, headers: this.options.headers(), body }, signal, undefined);
  }

  private async json(response: Dispatcher.ResponseData, signal: AbortSignal): Promise<unknown> {
    return (await this.options.http.readJson(response, signal)).value;
  }

  private invalid(reason: string): GatewayError {
    return new GatewayError('upstream_invalid_response', { upstream: this.options.name, reason });
  }
}

/** A line's chat body as Gemini's request; a body the translator cannot read is refused (the gateway runs it: a 400). */
function translated(body: Record<string, unknown>, index: number) {
  if (!Array.isArray(body.messages) || !body.messages.every(isJsonObject))
    throw refused(`lines[${index}].body.messages`, 'not an array of message objects');
  try {
    return toGeminiRequest(body as unknown as ChatRequestBody);
  } catch (error) {
    if (isGatewayError(error) && error.status >= 400 && error.status < 500) throw error;
    throw refused(`lines[${index}].body`, 'a chat request the gateway cannot translate for Gemini');
  }
}

function refused(field: string, problem: string): GatewayError {
  return new GatewayError('validation_failed', { errors: [{ field, problem }] });
}

/** The batch an Operation carries (its `metadata`), or the batch itself when the answer is one. */
function batchOf(operation: unknown): Received<GeminiBatch> | undefined {
  const value = received<GeminiBatchOperation>(operation);
  return received<GeminiBatch>(value?.metadata) ?? (value as Received<GeminiBatch> | undefined);
}

function batchNameOf(operation: unknown): string | undefined {
  const name = received<GeminiBatchOperation>(operation)?.name ?? batchOf(operation)?.name;
  return typeof name === 'string' && BATCH_NAME.test(name) ? name : undefined;
}

/** An id the engine stored is one `submit` or `find` returned; anything else is never put in a path. */
function checkedName(batchId: string): string {
  if (!BATCH_NAME.test(batchId))
    throw new GatewayError('validation_failed', { errors: [{ field: 'batch_id', problem: 'not batches/<id>' }] });
  return batchId;
}

/** `BATCH_STATE_RUNNING` (or the SDK's older `JOB_STATE_RUNNING`) as `RUNNING`. */
function stateOf(operation: Received<GeminiBatchOperation>): string | undefined {
  const state = batchOf(operation)?.state;
  if (typeof state !== 'string') return undefined;
  return state.replace(/^(BATCH|JOB)_STATE_/, '');
}

function objectKey(metadata: unknown): unknown {
  return isJsonObject(metadata) ? metadata.key : undefined;
}
