import type { BatchLine, BatchRecord, BatchStore } from '../../store/batch-contract.js';
import type { BatchFiles } from './batch-files.js';

const PAGE = 500;

/** A line's id in OpenAI's output and error files: fixed by the batch and the line, so a rewrite gives the same. */
export function lineId(batchId: string, index: number): string {
  return `batch_req_${batchId.replace(/^batch_/, '')}_${index}`;
}

/** Every line of a batch in index order, a page at a time (bounded memory, whatever the batch's size). */
export async function* allLines(store: BatchStore, batchId: string): AsyncGenerator<BatchLine> {
  let after = -1;
  for (;;) {
    const page = await store.lines(batchId, after, PAGE);
    for (const line of page) yield line;
    const last = page[page.length - 1];
    if (!last || page.length < PAGE) return;
    after = last.index;
  }
}

function parsedOr(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** OpenAI's line of an output or error file: `{id, custom_id, response: {status_code, request_id, body}, error}`. */
export function openAiResultLine(batchId: string, line: BatchLine): string {
  const answered = line.statusCode !== null;
  return JSON.stringify({
    id: lineId(batchId, line.index),
    custom_id: line.customId,
    response: answered
      ? { status_code: line.statusCode, request_id: line.requestId, body: parsedOr(line.response) }
      : null,
    error: answered ? null : parsedOr(line.error),
  });
}

async function* jsonl(store: BatchStore, batch: BatchRecord, output: boolean): AsyncGenerator<Uint8Array> {
  let text = '';
  for await (const line of allLines(store, batch.id)) {
    if (line.state === 'pending' || (line.state === 'succeeded') !== output) continue;
    text += `${openAiResultLine(batch.id, line)}\n`;
    if (text.length >= 64 * 1024) {
      yield Buffer.from(text);
      text = '';
    }
  }
  if (text !== '') yield Buffer.from(text);
}

/** What `writeResultFiles` wrote: the files' ids (null: not written), and when the last of them expires. */
export interface WrittenResults {
  outputFileId: string | null;
  errorFileId: string | null;
  /** The latest `expires_at` of the files written, in ms; null when none was written (or none expires). */
  filesUntilMs: number | null;
}

/**
 * Writes OpenAI's output file (the lines answered 2xx) and error file (every other line: answered with an error,
 * or never answered: canceled, expired) through the files, as the batch owner's, purpose `batch_output`, each
 * expiring `output_expires_after.seconds` after it is written when the batch was created with it (else the files'
 * default age). A file is written only when it has lines (OpenAI leaves the id absent otherwise).
 */
export async function writeResultFiles(
  store: BatchStore,
  files: BatchFiles | undefined,
  batch: BatchRecord,
): Promise<WrittenResults> {
  if (!files || batch.api !== 'openai') return { outputFileId: null, errorFileId: null, filesUntilMs: null };
  const { counts } = batch;
  let filesUntilMs: number | null = null;
  const write = async (output: boolean) => {
    const file = await files.create(batch.owner, {
      purpose: 'batch_output',
      filename: `${batch.id}_${output ? 'output' : 'error'}.jsonl`,
      content: jsonl(store, batch, output),
      ...(batch.outputTtlSeconds === null ? {} : { ttlSeconds: batch.outputTtlSeconds }),
    });
    if (file.expires_at !== null) filesUntilMs = Math.max(filesUntilMs ?? 0, file.expires_at * 1000);
    return file.id;
  };
  const outputFileId = counts.succeeded > 0 ? await write(true) : null;
  const errorFileId = counts.errored + counts.canceled + counts.expired > 0 ? await write(false) : null;
  return { outputFileId, errorFileId, filesUntilMs };
}

/** Anthropic's results line: `{custom_id, result: {type, message | error}}`. */
export function anthropicResultLine(line: BatchLine): string {
  let result: Record<string, unknown>;
  switch (line.state) {
    case 'succeeded':
      result = { type: 'succeeded', message: parsedOr(line.response) };
      break;
    case 'errored':
      result = { type: 'errored', error: anthropicError(line) };
      break;
    case 'canceled':
      result = { type: 'canceled' };
      break;
    default:
      result = { type: 'expired' };
  }
  return JSON.stringify({ custom_id: line.customId, result });
}

/** The error of an errored line in Anthropic's ErrorResponse shape (`{type: "error", error: {type, message}}`). */
function anthropicError(line: BatchLine): unknown {
  const body = parsedOr(line.response ?? line.error) as { type?: unknown; error?: unknown; message?: unknown } | null;
  if (body && body.type === 'error' && typeof body.error === 'object') return { type: 'error', error: body.error };
  const message = typeof body?.message === 'string' ? body.message : 'the request failed';
  return { type: 'error', error: { type: 'api_error', message } };
}
