/**
 * A real node:http server speaking OpenAI's Files and Batch APIs on the wire (https://platform.openai.com/docs/
 * api-reference/batch): `POST /v1/files` (multipart, purpose `batch`), `POST /v1/batches`, `GET /v1/batches/{id}`,
 * `GET /v1/batches` (paged, `has_more`), `POST /v1/batches/{id}/cancel`, `GET /v1/files/{id}/content` (the output and
 * error files, JSONL), `DELETE /v1/files/{id}`, and OpenAI's error body. A batch stays `in_progress` for
 * `pollsBeforeDone` reads, then completes: each input line answered as a chat completion (or an embedding list),
 * a line whose last message says `ERR` answered 400 in the error file. Knobs make it hostile (see MockBatchOptions).
 * `POST /v1/chat/completions` answers too, so a batch the gateway runs itself is seen line by line.
 */
import type { ServerResponse } from 'node:http';
import { startRecordingServer, type RecordedHttpRequest } from './recording-server.js';

export interface MockBatchOptions {
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

interface MockBatch {
  id: string;
  endpoint: string;
  inputFileId: string;
  metadata: Record<string, string>;
  status: string;
  reads: number;
  outputFileId: string | null;
  errorFileId: string | null;
}

export interface MockOpenAiBatches {
  baseUrl: string;
  requests: RecordedHttpRequest[];
  options: MockBatchOptions;
  /** The uploaded files: id -> the `file` part's text. */
  files: Map<string, string>;
  batches: Map<string, MockBatch>;
  of(method: string, prefix: string): RecordedHttpRequest[];
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'req_mock' });
  res.end(JSON.stringify(body));
}

function error(res: ServerResponse, status: number, message: string): void {
  send(res, status, { error: { message, type: 'invalid_request_error', param: null, code: null } });
}

/** The `file` part of a multipart body (text), and the `purpose` field. */
function multipart(request: RecordedHttpRequest): { purpose: string | undefined; file: string | undefined } {
  const type = String(request.headers['content-type'] ?? '');
  const boundary = /boundary=(.+)$/.exec(type)?.[1];
  if (!boundary) return { purpose: undefined, file: undefined };
  const out: { purpose: string | undefined; file: string | undefined } = { purpose: undefined, file: undefined };
  for (const part of request.text.split(`--${boundary}`)) {
    const split = part.indexOf('\r\n\r\n');
    if (split === -1) continue;
    const head = part.slice(0, split);
    const value = part.slice(split + 4).replace(/\r\n$/, '');
    if (head.includes('name="purpose"')) out.purpose = value;
    if (head.includes('name="file"')) out.file = value;
  }
  return out;
}

function answerOf(
  line: { custom_id: string; body: Record<string, unknown> },
  options: MockBatchOptions,
  endpoint: string,
) {
  const messages = (line.body.messages as Array<{ content: string }> | undefined) ?? [];
  if (messages.at(-1)?.content === 'ERR')
    return {
      ok: false,
      line: {
        id: `batch_req_${line.custom_id}`,
        custom_id: line.custom_id,
        response: {
          status_code: 400,
          request_id: `req_${line.custom_id}`,
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
          created: 1_700_000_000,
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
    line: {
      id: `batch_req_${line.custom_id}`,
      custom_id: line.custom_id,
      response: { status_code: 200, request_id: `req_${line.custom_id}`, body },
      error: null,
    },
  };
}

export async function startMockOpenAiBatches(
  initial: MockBatchOptions = { pollsBeforeDone: 1 },
): Promise<MockOpenAiBatches> {
  const files = new Map<string, string>();
  const batches = new Map<string, MockBatch>();
  const mock = { options: { ...initial } } as MockOpenAiBatches;
  let counter = 0;
  const finish = (batch: MockBatch, cancelled: boolean) => {
    const { options } = mock;
    if (options.failWith !== undefined && !cancelled) {
      batch.status = 'failed';
      return;
    }
    const input = (files.get(batch.inputFileId) ?? '').split('\n').filter((l) => l !== '');
    const lines = input.map((l) => JSON.parse(l) as { custom_id: string; body: Record<string, unknown> });
    const answered = cancelled ? lines.slice(0, options.answeredBeforeCancel ?? 0) : lines;
    const results = answered.map((l) => answerOf(l, options, batch.endpoint));
    const output =
      options.rawOutput ??
      results
        .filter((r) => r.ok)
        .map((r) => `${JSON.stringify(r.line)}\n`)
        .join('');
    const errors = results
      .filter((r) => !r.ok)
      .map((r) => `${JSON.stringify(r.line)}\n`)
      .join('');
    if (output !== '') files.set((batch.outputFileId = `file-out-${++counter}`), output);
    if (errors !== '') files.set((batch.errorFileId = `file-err-${++counter}`), errors);
    batch.status = cancelled ? 'cancelled' : 'completed';
  };
  const view = (batch: MockBatch) => ({
    id: batch.id,
    object: 'batch',
    endpoint: batch.endpoint,
    errors:
      batch.status === 'failed'
        ? { object: 'list', data: [{ code: 'invalid', message: mock.options.failWith, line: 1 }] }
        : null,
    input_file_id: batch.inputFileId,
    completion_window: '24h',
    status: batch.status,
    output_file_id: batch.outputFileId,
    error_file_id: batch.errorFileId,
    created_at: 1_700_000_000,
    metadata: batch.metadata,
    request_counts: { total: 0, completed: 0, failed: 0 },
  });
  const server = await startRecordingServer((request, res) => {
    const path = request.url.split('?')[0] ?? '';
    const { options } = mock;
    if (request.method === 'POST' && path === '/v1/files') {
      const { purpose, file } = multipart(request);
      if (purpose !== 'batch' || file === undefined) return error(res, 400, 'purpose batch and a file are required');
      const id = `file-up-${++counter}`;
      files.set(id, file);
      return send(res, 200, {
        id,
        object: 'file',
        bytes: Buffer.byteLength(file),
        created_at: 1_700_000_000,
        filename: 'in.jsonl',
        purpose: 'batch',
      });
    }
    if (request.method === 'POST' && path === '/v1/batches') {
      if (options.createStatus !== undefined)
        return error(res, options.createStatus, 'batches are not enabled for this key');
      const body = request.body as { input_file_id?: string; endpoint?: string; metadata?: Record<string, string> };
      if (!body?.input_file_id || !files.has(body.input_file_id)) return error(res, 400, 'no such input file');
      const batch: MockBatch = {
        id: `batch_up_${++counter}`,
        endpoint: body.endpoint ?? '',
        inputFileId: body.input_file_id,
        metadata: body.metadata ?? {},
        status: 'validating',
        reads: 0,
        outputFileId: null,
        errorFileId: null,
      };
      batches.set(batch.id, batch);
      if ((options.resetAfterCreate ?? 0) > 0) {
        options.resetAfterCreate = (options.resetAfterCreate ?? 0) - 1;
        res.socket?.destroy();
        return;
      }
      return send(res, 200, view(batch));
    }
    if (request.method === 'GET' && path === '/v1/batches') {
      const all = [...batches.values()].reverse();
      const after = new URL(request.url, 'http://x').searchParams.get('after');
      const start = after ? all.findIndex((b) => b.id === after) + 1 : 0;
      const page = all.slice(start, start + 2); // small pages: the gateway must follow has_more
      return send(res, 200, { object: 'list', data: page.map(view), has_more: start + 2 < all.length });
    }
    const batchMatch = /^\/v1\/batches\/([^/]+)(\/cancel)?$/.exec(path);
    const batch = batchMatch ? batches.get(decodeURIComponent(batchMatch[1] ?? '')) : undefined;
    if (batchMatch && !batch) return error(res, 404, 'no such batch');
    if (batch && batchMatch?.[2] && request.method === 'POST') {
      if (['validating', 'in_progress'].includes(batch.status)) batch.status = 'cancelling';
      return send(res, 200, view(batch));
    }
    if (batch && request.method === 'GET') {
      batch.reads += 1;
      if (batch.status === 'cancelling') finish(batch, true);
      else if (['validating', 'in_progress'].includes(batch.status))
        if (batch.reads > options.pollsBeforeDone) finish(batch, false);
        else batch.status = 'in_progress';
      return send(res, 200, view(batch));
    }
    const fileMatch = /^\/v1\/files\/([^/]+)(\/content)?$/.exec(path);
    if (fileMatch) {
      const id = decodeURIComponent(fileMatch[1] ?? '');
      if (!files.has(id)) return error(res, 404, 'no such file');
      if (request.method === 'DELETE') {
        files.delete(id);
        return send(res, 200, { id, object: 'file', deleted: true });
      }
      if (fileMatch[2]) {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        return void res.end(files.get(id));
      }
    }
    if (request.method === 'POST' && path === '/v1/chat/completions') {
      const body = request.body as { model?: string; messages?: Array<{ content: string }> };
      return send(
        res,
        200,
        answerOf({ custom_id: 'live', body: body as Record<string, unknown> }, options, path).line.response.body,
      );
    }
    if (request.method === 'GET' && path === '/v1/models') return send(res, 200, { object: 'list', data: [] });
    return error(res, 404, `no route ${request.method} ${path}`);
  });
  return Object.assign(mock, {
    baseUrl: `${server.origin}/v1`,
    requests: server.requests,
    files,
    batches,
    of: (method: string, prefix: string) =>
      server.requests.filter((r) => r.method === method && r.url.startsWith(prefix)),
    close: () => server.close(),
  });
}
