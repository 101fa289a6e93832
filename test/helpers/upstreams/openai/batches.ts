/**
 * OpenAI's Batch API as the mock plays it (https://platform.openai.com/docs/api-reference/batch), when started with
 * `batches`: `POST /v1/batches` (its input a file taken on `POST /v1/files`), `GET /v1/batches/{id}`, `GET
 * /v1/batches` (paged, `has_more`), `POST /v1/batches/{id}/cancel`, and `GET /v1/files/{id}/content` (the input,
 * output and error files, JSONL). A batch stays `in_progress` for `pollsBeforeDone` reads, then completes: each
 * input line answered as a chat completion (or an embedding list), a line whose last message says `ERR` answered
 * 400 in the error file. The options make it hostile (see BatchOptions).
 */
import { sendJson, type Exchange } from './behaviors.js';
import { openAIError } from './chat.js';

export interface BatchOptions {
  /** Batch reads answered `in_progress` before it completes (Infinity: until cancelled). */
  pollsBeforeDone: number;
  /** `POST /v1/batches` answers this status with an error body (a refusal). */
  createStatus?: number;
  /** The connection of the next N creates is destroyed after the batch was made (a crash before the id was kept). */
  resetAfterCreate?: number;
  /** The batch ends `failed` with this message instead of completing. */
  failWith?: string;
  /** Output lines as written (raw JSONL text) replace the generated ones: hostile result files. */
  rawOutput?: string;
  /** The custom_ids a cancelled batch still answered (the rest get no line). */
  answeredBeforeCancel?: number;
  /** Usage of each answer. */
  usage?: { prompt_tokens: unknown; completion_tokens: unknown; total_tokens: unknown };
}

/** A batch the mock holds. */
export interface UpstreamBatch {
  id: string;
  endpoint: string;
  inputFileId: string;
  metadata: Record<string, string>;
  status: string;
  reads: number;
  outputFileId: string | null;
  errorFileId: string | null;
}

interface InputLine {
  custom_id: string;
  body: Record<string, unknown>;
}

const CREATED = 1_700_000_000;
const PAGE = 2; // small pages: the gateway must follow has_more

function error(ex: Exchange, status: number, message: string): void {
  sendJson(ex, status, openAIError(message, 'invalid_request_error', null));
}

function answerOf(line: InputLine, options: BatchOptions, endpoint: string): { ok: boolean; line: unknown } {
  const messages = (line.body.messages as Array<{ content: string }> | undefined) ?? [];
  const id = `batch_req_${line.custom_id}`;
  const requestId = `req_${line.custom_id}`;
  if (messages.at(-1)?.content === 'ERR')
    return {
      ok: false,
      line: {
        id,
        custom_id: line.custom_id,
        response: {
          status_code: 400,
          request_id: requestId,
          body: { error: { message: 'bad line', type: 'invalid_request_error' } },
        },
        error: null,
      },
    };
  const usage = options.usage ?? { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 };
  const body =
    endpoint === '/v1/embeddings'
      ? {
          object: 'list',
          data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }],
          model: line.body.model,
          usage,
        }
      : {
          id: `chatcmpl-${line.custom_id}`,
          object: 'chat.completion',
          created: CREATED,
          model: line.body.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: `answer to ${messages.at(-1)?.content}` },
              finish_reason: 'stop',
            },
          ],
          usage,
        };
  return {
    ok: true,
    line: { id, custom_id: line.custom_id, response: { status_code: 200, request_id: requestId, body }, error: null },
  };
}

/** The Batch API's state: the options (changed by a test as it goes), the batches made, the files they wrote. */
export class OpenAiBatches {
  readonly created = new Map<string, UpstreamBatch>();
  /** The output and error files the batches wrote: id -> JSONL text. */
  private readonly files = new Map<string, string>();
  private counter = 0;

  constructor(
    /** Off: the mock answers the Batch API's paths 404, as an OpenAI-compatible server without it. */
    readonly enabled: boolean,
    public options: BatchOptions,
    /** The text of a file taken on `POST /v1/files` and not deleted, by id. */
    private readonly uploaded: (id: string) => string | undefined,
  ) {}

  /** The text of a file: an upload, or a batch's output or error file. */
  fileText(id: string): string | undefined {
    return this.files.get(id) ?? this.uploaded(id);
  }

  /** Deletes a batch's output or error file; false when it is not one. */
  deleteFile(id: string): boolean {
    return this.files.delete(id);
  }

  /** Answers a Batch API call, or returns false when the call is not one (or the API is off). */
  route(ex: Exchange, method: string, path: string): boolean {
    if (!this.enabled) return false;
    if (method === 'POST' && path === '/v1/batches') return (this.create(ex), true);
    if (method === 'GET' && path === '/v1/batches') return (this.list(ex), true);
    const fileMatch = /^\/v1\/files\/([^/]+)\/content$/.exec(path);
    if (method === 'GET' && fileMatch) {
      const text = this.fileText(decodeURIComponent(fileMatch[1] ?? ''));
      if (text === undefined) return (error(ex, 404, 'no such file'), true);
      ex.res.writeHead(200, { 'content-type': 'application/octet-stream' });
      ex.res.end(text);
      return true;
    }
    const match = /^\/v1\/batches\/([^/]+)(\/cancel)?$/.exec(path);
    if (!match) return false;
    const batch = this.created.get(decodeURIComponent(match[1] ?? ''));
    if (!batch) return (error(ex, 404, 'no such batch'), true);
    if (match[2] && method === 'POST') {
      if (['validating', 'in_progress'].includes(batch.status)) batch.status = 'cancelling';
      return (sendJson(ex, 200, this.view(batch)), true);
    }
    if (match[2] || method !== 'GET') return false;
    batch.reads += 1;
    if (batch.status === 'cancelling') this.finish(batch, true);
    else if (['validating', 'in_progress'].includes(batch.status))
      if (batch.reads > this.options.pollsBeforeDone) this.finish(batch, false);
      else batch.status = 'in_progress';
    sendJson(ex, 200, this.view(batch));
    return true;
  }

  private create(ex: Exchange): void {
    const { options } = this;
    if (options.createStatus !== undefined)
      return error(ex, options.createStatus, 'batches are not enabled for this key');
    const body = ex.json as
      { input_file_id?: string; endpoint?: string; metadata?: Record<string, string> } | undefined;
    if (!body?.input_file_id || this.uploaded(body.input_file_id) === undefined)
      return error(ex, 400, 'no such input file');
    const batch: UpstreamBatch = {
      id: `batch_up_${++this.counter}`,
      endpoint: body.endpoint ?? '',
      inputFileId: body.input_file_id,
      metadata: body.metadata ?? {},
      status: 'validating',
      reads: 0,
      outputFileId: null,
      errorFileId: null,
    };
    this.created.set(batch.id, batch);
    if ((options.resetAfterCreate ?? 0) > 0) {
      options.resetAfterCreate = (options.resetAfterCreate ?? 0) - 1;
      ex.res.socket?.destroy();
      return;
    }
    sendJson(ex, 200, this.view(batch));
  }

  private list(ex: Exchange): void {
    const all = [...this.created.values()].reverse();
    const after = new URL(ex.req.url ?? '/', 'http://x').searchParams.get('after');
    const start = after ? all.findIndex((b) => b.id === after) + 1 : 0;
    const page = all.slice(start, start + PAGE);
    sendJson(ex, 200, { object: 'list', data: page.map((b) => this.view(b)), has_more: start + PAGE < all.length });
  }

  private finish(batch: UpstreamBatch, cancelled: boolean): void {
    const { options } = this;
    if (options.failWith !== undefined && !cancelled) {
      batch.status = 'failed';
      return;
    }
    const input = (this.uploaded(batch.inputFileId) ?? '').split('\n').filter((l) => l !== '');
    const lines = input.map((l) => JSON.parse(l) as InputLine);
    const answered = cancelled ? lines.slice(0, options.answeredBeforeCancel ?? 0) : lines;
    const results = answered.map((l) => answerOf(l, options, batch.endpoint));
    const jsonl = (ok: boolean) =>
      results
        .filter((r) => r.ok === ok)
        .map((r) => `${JSON.stringify(r.line)}\n`)
        .join('');
    const output = options.rawOutput ?? jsonl(true);
    const errors = jsonl(false);
    if (output !== '') this.files.set((batch.outputFileId = `file-out-${++this.counter}`), output);
    if (errors !== '') this.files.set((batch.errorFileId = `file-err-${++this.counter}`), errors);
    batch.status = cancelled ? 'cancelled' : 'completed';
  }

  private view(batch: UpstreamBatch): Record<string, unknown> {
    return {
      id: batch.id,
      object: 'batch',
      endpoint: batch.endpoint,
      errors:
        batch.status === 'failed'
          ? { object: 'list', data: [{ code: 'invalid', message: this.options.failWith, line: 1 }] }
          : null,
      input_file_id: batch.inputFileId,
      completion_window: '24h',
      status: batch.status,
      output_file_id: batch.outputFileId,
      error_file_id: batch.errorFileId,
      created_at: CREATED,
      metadata: batch.metadata,
      request_counts: { total: 0, completed: 0, failed: 0 },
    };
  }
}
