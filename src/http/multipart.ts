import type { IncomingMessage } from 'node:http';
import { Busboy, type BusboyFileStream } from '@fastify/busboy';
import { ClientGoneError } from '../errors/client-gone.js';
import { GatewayError } from '../errors/gateway-error.js';

/** A form's one file part, streamed: its bytes are read as the body arrives, never gathered. */
export interface MultipartFile {
  field: string;
  filename: string;
  mimeType: string;
  /** Ends only once the whole body is parsed (every field after the file is known then). */
  content: AsyncIterable<Uint8Array>;
  /** The form's fields so far: all of them once `content` has ended. */
  fields: ReadonlyMap<string, string>;
}

export interface MultipartForm {
  /** The file part once it starts; rejects when the body ends without one, or is malformed before it. */
  file: Promise<MultipartFile>;
  /** Every field (not the file), once the body is parsed whole. */
  fields: Promise<ReadonlyMap<string, string>>;
}

export interface MultipartLimits {
  /** The name of the file part (`file`, `data`). */
  fileField: string;
  /** The file's bound: one byte more is read, so the reader of `content` can tell it was passed. */
  maxFileBytes: number;
  /** Parts at most, the file included. */
  maxParts: number;
  /** The longest field value (bytes). */
  maxFieldBytes: number;
}

const invalid = (problem: string, extra: Record<string, unknown> = {}) =>
  new GatewayError('invalid_multipart', { problem, ...extra });

/**
 * Reads a `multipart/form-data` body (RFC 7578) as a stream with @fastify/busboy: the fields into a map (bounded in
 * number and size), the one file part handed on as a stream with backpressure (the parser waits while the file's
 * reader is busy). Whatever goes wrong — a missing boundary, a second file, too many parts, a field too long, a
 * body cut off — ends both promises and the file's stream with a 400 `invalid_multipart` saying what.
 */
export function readMultipart(raw: IncomingMessage, limits: MultipartLimits): MultipartForm {
  const contentType = raw.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\s*;/i.test(contentType)) {
    const error = new GatewayError('invalid_multipart', {
      header: 'content-type',
      problem: 'must be multipart/form-data with a boundary',
    });
    return refused(error);
  }
  let parser;
  try {
    parser = Busboy({
      headers: { ...raw.headers, 'content-type': contentType },
      limits: {
        files: 1,
        parts: limits.maxParts,
        fields: limits.maxParts,
        fieldSize: limits.maxFieldBytes,
        fieldNameSize: 200,
        fileSize: limits.maxFileBytes + 1,
        headerPairs: 20,
      },
    });
  } catch (error) {
    const failure = invalid(error instanceof Error ? error.message : 'unreadable', { header: 'content-type' });
    return refused(failure);
  }
  return parse(raw, parser, limits);
}

/** A form refused before any byte was read (`fields` marked handled: the caller awaits `file` first). */
function refused(error: GatewayError): MultipartForm {
  const fields = Promise.reject(error);
  fields.catch(() => undefined);
  return { file: Promise.reject(error), fields };
}

function parse(raw: IncomingMessage, parser: ReturnType<typeof Busboy>, limits: MultipartLimits): MultipartForm {
  const fields = new Map<string, string>();
  let fileStream: BusboyFileStream | undefined;
  let failed: Error | undefined;
  let resolveFile!: (file: MultipartFile) => void, rejectFile!: (error: unknown) => void;
  let resolveFields!: (map: ReadonlyMap<string, string>) => void, rejectFields!: (error: unknown) => void;
  const file = new Promise<MultipartFile>((resolve, reject) => ((resolveFile = resolve), (rejectFile = reject)));
  const done = new Promise<ReadonlyMap<string, string>>(
    (resolve, reject) => ((resolveFields = resolve), (rejectFields = reject)),
  );
  file.catch(() => undefined);
  done.catch(() => undefined);
  const fail = (error: Error) => {
    if (failed) return;
    failed = error;
    fileStream?.destroy(error);
    rejectFile(error);
    rejectFields(error);
    raw.unpipe(parser);
    parser.destroy();
  };
  // The file's stream fails on its own when the body ends inside it (a whole body with no closing boundary: the
  // parser's "Part terminated early..."), possibly before the parser's own error: its reader gets the 400 too, not a 500.
  const explain = (error: unknown): unknown => {
    if (failed) return failed;
    if (error instanceof GatewayError || error instanceof ClientGoneError) return error;
    // The caller went away mid-body: left to the error handler as it is (recorded 499, or 408 for the timeout).
    if (!raw.complete) return error;
    fail(invalid(error instanceof Error ? error.message : 'unreadable'));
    return failed;
  };
  parser.on('field', (name, value, nameTruncated, valueTruncated) => {
    if (nameTruncated || valueTruncated)
      return fail(invalid('a field is too long', { field: name.slice(0, 64), max_bytes: limits.maxFieldBytes }));
    if (fields.has(name)) return fail(invalid('a field is sent twice', { field: name.slice(0, 64) }));
    fields.set(name, value);
  });
  parser.on('file', (name, stream, filename, _encoding, mimeType) => {
    if (name !== limits.fileField) {
      stream.resume();
      return fail(invalid(`the file must be sent in the field "${limits.fileField}"`, { field: name.slice(0, 64) }));
    }
    fileStream = stream;
    // Its reader sees a failure through the iteration; without a reader yet, a destroy must not be an uncaught error.
    stream.on('error', () => undefined);
    resolveFile({ field: name, filename, mimeType, content: fileContent(stream, done, explain), fields });
  });
  parser.on('filesLimit', () => fail(invalid('only one file part is accepted')));
  parser.on('partsLimit', () => fail(invalid('too many parts', { max_parts: limits.maxParts })));
  parser.on('fieldsLimit', () => fail(invalid('too many fields', { max_parts: limits.maxParts })));
  parser.on('finish', () => {
    if (!fileStream) fail(invalid('the form has no file part', { field: limits.fileField }));
    else resolveFields(fields);
  });
  // Piped by hand, not with stream.pipeline: on a parse failure that would destroy `raw` as well, and with it the
  // socket, before the 400 is written (a caller still sending its body saw a reset, not the answer). The parser is
  // detached instead, and the answer's lingering close reads the rest of the body (http/lingering-close.ts).
  parser.on('error', (error: unknown) => fail(invalid(error instanceof Error ? error.message : 'unreadable')));
  // The caller went away mid-body (or the request timeout cut it): nobody to answer, recorded as such (499/408).
  const cut = () => {
    if (!raw.complete) fail(new ClientGoneError());
  };
  raw.once('error', cut);
  raw.once('close', cut);
  raw.pipe(parser);
  return { file, fields: done };
}

/** The file's bytes, ending only once the rest of the form is parsed (its fields settle what the file is). */
async function* fileContent(
  stream: BusboyFileStream,
  done: Promise<ReadonlyMap<string, string>>,
  explain: (error: unknown) => unknown,
): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) yield chunk;
  } catch (error) {
    throw explain(error);
  }
  await done;
}
