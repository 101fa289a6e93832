import type { BatchError, BatchRecord, BatchStore, NewBatchLine } from '../../store/batch-contract.js';
import type { BatchFiles } from './batch-files.js';
import { LINE_CHUNK, type BatchLimits } from './batch-service.js';
import { jsonlLines, LineTooLongError } from '../../streaming/jsonl-lines.js';

/** Errors reported per batch, at most (the first ones; the file may have thousands). */
const MAX_REPORTED_ERRORS = 100;
const MAX_CUSTOM_ID_CHARS = 512;

/** What reading the input found: its errors (none: the lines are stored), and the model every line names. */
export interface InputCheck {
  errors: BatchError[];
  /** The one model all lines name; null when they name several, or a line names none. */
  model: string | null;
}

/**
 * Reads an OpenAI batch's input file (streamed, one bounded line at a time) into its lines: each a JSON object
 * `{custom_id, method: "POST", url, body}` whose url is the batch's endpoint and whose custom_id is unique. Returns
 * the errors found (the batch then fails, as OpenAI's does) or an empty list, and the lines' one model. Running it
 * again after a crash is safe: a line already stored is left as it is (and the model is found again).
 */
export async function validateInput(
  batch: BatchRecord,
  files: BatchFiles | undefined,
  store: BatchStore,
  limits: BatchLimits,
): Promise<InputCheck> {
  const opened = batch.inputFileId === null ? undefined : await files?.openContent(batch.owner, batch.inputFileId);
  if (!opened)
    return { errors: [{ code: 'file_not_found', message: 'The input file no longer exists.' }], model: null };
  const errors: BatchError[] = [];
  // undefined: no line yet; null: lines name several models (or one names none).
  let model: string | null | undefined;
  const seen = new Set<string>();
  let chunk: NewBatchLine[] = [];
  let index = 0;
  const report = (error: BatchError) => {
    if (errors.length < MAX_REPORTED_ERRORS) errors.push(error);
  };
  try {
    for await (const { number, text } of jsonlLines(opened.stream, limits.maxLineBytes)) {
      if (index >= limits.maxLines) {
        report({
          code: 'too_many_requests',
          message: `A batch holds at most ${limits.maxLines} requests.`,
          line: number,
        });
        break;
      }
      const line = checkLine(text, number, batch.endpoint, seen);
      if ('code' in line) {
        report(line);
        continue;
      }
      if (errors.length > 0) continue; // the batch fails: keep only reading for more errors
      const named = line.model;
      model = model === undefined || model === named ? named : null;
      chunk.push({ index, customId: line.customId, url: line.url, body: line.body });
      index += 1;
      if (chunk.length >= LINE_CHUNK) {
        await store.addLines(batch.id, chunk);
        chunk = [];
      }
    }
  } catch (error) {
    if (!(error instanceof LineTooLongError)) throw error;
    report({ code: 'line_too_long', message: error.message, line: error.line });
  }
  if (errors.length === 0 && chunk.length > 0) await store.addLines(batch.id, chunk);
  if (errors.length === 0 && index === 0) report({ code: 'empty_file', message: 'The input file has no requests.' });
  return { errors, model: model ?? null };
}

function checkLine(
  text: string,
  number: number,
  endpoint: string,
  seen: Set<string>,
): BatchError | (Omit<NewBatchLine, 'index'> & { model: string | null }) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { code: 'invalid_json_line', message: 'This line is not valid JSON.', line: number };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return { code: 'invalid_request', message: 'A line must be a JSON object.', line: number };
  const { custom_id: customId, method, url, body } = parsed as Record<string, unknown>;
  if (typeof customId !== 'string' || customId === '' || customId.length > MAX_CUSTOM_ID_CHARS)
    return {
      code: 'invalid_request',
      message: `custom_id must be a string of 1 to ${MAX_CUSTOM_ID_CHARS} characters.`,
      line: number,
      param: 'custom_id',
    };
  if (seen.has(customId))
    return { code: 'duplicate_custom_id', message: 'custom_id is used twice.', line: number, param: 'custom_id' };
  seen.add(customId);
  if (method !== 'POST')
    return { code: 'invalid_method', message: 'method must be "POST".', line: number, param: 'method' };
  if (url !== endpoint)
    return {
      code: 'mismatched_endpoint',
      message: `url must be the batch's endpoint, ${endpoint}.`,
      line: number,
      param: 'url',
    };
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { code: 'invalid_request', message: 'body must be a JSON object.', line: number, param: 'body' };
  const request = body as Record<string, unknown>;
  if (request.stream === true)
    return { code: 'invalid_request', message: 'A batch line cannot stream.', line: number, param: 'body.stream' };
  const model = typeof request.model === 'string' && request.model !== '' ? request.model : null;
  return { customId, url: endpoint, body: JSON.stringify(request), model };
}
