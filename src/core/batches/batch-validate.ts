import type { BatchError, BatchRecord, BatchStore, NewBatchLine } from '../../store/batch-contract.js';
import type { BatchFiles } from './batch-files.js';
import { LINE_CHUNK, LINE_CHUNK_BYTES, type BatchLimits } from './batch-service.js';
import { jsonlLines, LineTooLongError } from '../../streaming/jsonl-lines.js';
import { GatewayError } from '../../errors/gateway-error.js';

/** Errors reported per batch, at most (the first ones; the file may have thousands). */
const MAX_REPORTED_ERRORS = 100;
const MAX_CUSTOM_ID_CHARS = 512;
const BYTE_ORDER_MARK = 0xfeff;

/**
 * Reads one line's JSON the way the gateway reads a caller's body (routes/batch-requests-body.ts `readBatchJson`,
 * over http/json-body.ts `readJson`): a key sent twice in any object, a nesting past the depth bound, or a
 * prototype-poisoning key is refused with why (`reason`), as an interactive call's body would be; text that is not
 * JSON at all has no reason.
 */
export type JsonLineReader = (text: string) => { ok: true; value: unknown } | { ok: false; reason?: string };

/** What reading the input found: its errors (none: the lines are stored), and the model every line names. */
export interface InputCheck {
  errors: BatchError[];
  /** The one model all lines name; null when they name several, or a line names none. */
  model: string | null;
  /** The bytes of the lines' requests (what storing them takes in the database). */
  bytes: number;
}

const NO_FILE: InputCheck = {
  errors: [{ code: 'file_not_found', message: 'The input file no longer exists.' }],
  model: null,
  bytes: 0,
};

/** Counts the lines' bytes against the owner's storage quota before they are stored; throws its refusal. */
export type HoldLines = (bytes: number) => Promise<void>;

/** Where a batch's input is read from and its lines go, its bounds, and its lines' hold on the storage quota. */
export interface BatchInput {
  files: BatchFiles | undefined;
  store: BatchStore;
  limits: BatchLimits;
  readLine: JsonLineReader;
  holdLines?: HoldLines | undefined;
}

/**
 * Reads an OpenAI batch's input file (streamed, one bounded line at a time) into its lines: each a JSON object
 * `{custom_id, method: "POST", url, body}` whose url is the batch's endpoint and whose custom_id is unique. Two
 * passes: the whole file is checked first, storing nothing, so a batch that fails (a bad line, one line too many)
 * leaves no line behind; only a file found valid is read again into the store. Returns the errors found (the batch
 * then fails, as OpenAI's does) or an empty list, and the lines' one model. Running it again after a crash is
 * safe: a line already stored is left as it is (and the model is found again). A UTF-8 byte order mark before the
 * first line is skipped (RFC 8259 section 8.1, as the gateway's body parser does).
 */
export async function validateInput(
  batch: BatchRecord,
  { files, store, limits, readLine, holdLines }: BatchInput,
): Promise<InputCheck> {
  const checked = await readInput(batch, files, limits, readLine, undefined);
  if (!checked || checked.errors.length > 0) return checked ?? NO_FILE;
  // The lines are a second copy of the input, kept after the file may be deleted: they need room of their own.
  try {
    await holdLines?.(checked.bytes);
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    const quota = typeof error.details.quota === 'string' ? ` (${error.details.quota})` : '';
    const message = `Storing this batch's requests (${checked.bytes} bytes) would pass a storage quota${quota}: ${error.message}`;
    return { errors: [{ code: error.code, message }], model: null, bytes: checked.bytes };
  }
  // Valid: read again, storing the lines (the file cannot change: a file's bytes are never rewritten).
  const stored = await readInput(batch, files, limits, readLine, store);
  return stored ?? NO_FILE;
}

/** One pass over the input: checks every line; with `store`, also stores them (a pass over a file found valid). */
async function readInput(
  batch: BatchRecord,
  files: BatchFiles | undefined,
  limits: BatchLimits,
  readLine: JsonLineReader,
  store: BatchStore | undefined,
): Promise<InputCheck | undefined> {
  const opened = batch.inputFileId === null ? undefined : await files?.openContent(batch.owner, batch.inputFileId);
  if (!opened) return undefined;
  const errors: BatchError[] = [];
  // undefined: no line yet; null: lines name several models (or one names none).
  let model: string | null | undefined;
  const seen = new Set<string>();
  let chunk: NewBatchLine[] = [];
  let chunkBytes = 0;
  let index = 0;
  let bytes = 0;
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
      const unmarked = number === 1 && text.charCodeAt(0) === BYTE_ORDER_MARK ? text.slice(1) : text;
      const line = checkLine(unmarked, number, batch.endpoint, seen, readLine);
      if ('code' in line) {
        report(line);
        continue;
      }
      if (errors.length > 0) continue; // the batch fails: keep only reading for more errors
      const named = line.model;
      model = model === undefined || model === named ? named : null;
      index += 1;
      bytes += Buffer.byteLength(line.body);
      if (!store) continue;
      chunk.push({ index: index - 1, customId: line.customId, url: line.url, body: line.body });
      chunkBytes += line.body.length;
      if (chunk.length >= LINE_CHUNK || chunkBytes >= LINE_CHUNK_BYTES) {
        await store.addLines(batch.id, chunk);
        chunk = [];
        chunkBytes = 0;
      }
    }
  } catch (error) {
    if (!(error instanceof LineTooLongError)) throw error;
    report({ code: 'line_too_long', message: error.message, line: error.line });
  } finally {
    opened.stream.destroy();
  }
  if (store && errors.length === 0 && chunk.length > 0) await store.addLines(batch.id, chunk);
  if (errors.length === 0 && index === 0) report({ code: 'empty_file', message: 'The input file has no requests.' });
  return { errors, model: model ?? null, bytes };
}

function checkLine(
  text: string,
  number: number,
  endpoint: string,
  seen: Set<string>,
  readLine: JsonLineReader,
): BatchError | (Omit<NewBatchLine, 'index'> & { model: string | null }) {
  const read = readLine(text);
  if (!read.ok)
    return {
      code: 'invalid_json_line',
      message: read.reason === undefined ? 'This line is not valid JSON.' : `This line is refused: ${read.reason}.`,
      line: number,
    };
  const parsed = read.value;
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
