import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError, isGatewayError } from '../errors/gateway-error.js';
import { assertValid, boundedValidatorCompiler } from '../http/bounded-validation.js';
import { JSON_MEDIA_TYPES, POISONED_KEYS, compressedBodyRefusal, readJson } from '../http/json-body.js';
import { MAX_JSON_DEPTH } from '../http/json-shape.js';
import type { FieldProblem } from '../http/validation-details.js';
import { JsonItemsError, jsonArrayItems, type JsonItem } from '../streaming/json-array-items.js';
import { tokenCountSchema } from '../providers/request-bounds.js';

/** One request of Anthropic's create, as today's whole-body schema checked it (`requests.items`). */
const requestSchema = {
  type: 'object',
  required: ['custom_id', 'params'],
  properties: {
    custom_id: { type: 'string', pattern: '^[a-zA-Z0-9_-]{1,64}$' },
    // `max_tokens` bounded here too (providers/request-bounds.ts): refused at create, not line by line.
    params: {
      type: 'object',
      required: ['model'],
      properties: { model: { type: 'string' }, max_tokens: tokenCountSchema },
    },
  },
} as const;

export interface BatchBodyLimits {
  /** The whole body (`batches.max_create_bytes`). */
  maxCreateBytes: number;
  /** One request's JSON text (`batches.max_line_bytes`). */
  maxLineBytes: number;
}

export interface BatchRequestLine {
  customId: string;
  body: string;
  /** `params.model` (the schema requires a string). */
  model: string;
}

/**
 * A scope for the streamed create: its only body parsers (JSON media types, as the gateway's one parser takes) hand
 * the body on unread, so the route reads it itself; any other media type is the usual `415 unsupported_media_type`
 * (Fastify finds no parser), a compressed body too (as json-body.ts refuses it).
 */
export function acceptStreamedJson(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  const handOn = (request: FastifyRequest, _payload: unknown, done: (e: Error | null) => void) =>
    done(compressedBodyRefusal(request.headers) ?? null);
  for (const type of JSON_MEDIA_TYPES) scope.addContentTypeParser(type, handOn);
}

/** The body's bytes, refused with `413 payload_too_large` once past the bound (at once when Content-Length says so). */
async function* boundedBody(raw: IncomingMessage, maxBytes: number): AsyncGenerator<Uint8Array> {
  const tooLarge = () => new GatewayError('payload_too_large', { limit_bytes: maxBytes, field: 'body' });
  if (Number(raw.headers['content-length']) > maxBytes) throw tooLarge();
  let seen = 0;
  for await (const chunk of raw as AsyncIterable<Buffer>) {
    seen += chunk.length;
    if (seen > maxBytes) throw tooLarge();
    yield chunk;
  }
}

/** A scanner's refusal as the 400 a whole-body parse gave: not JSON is `invalid_json`, the wrong shape `validation_failed`. */
function refusal(error: JsonItemsError, maxLineBytes: number): GatewayError {
  if (error.kind === 'shape')
    return new GatewayError('validation_failed', {
      errors: [{ field: error.field ?? 'body', problem: error.problem }],
      offset: error.offset,
    });
  if (error.kind === 'too_long')
    return new GatewayError('batch_input_invalid', {
      field: error.field,
      problem: error.problem,
      max_bytes: maxLineBytes,
      offset: error.offset,
    });
  return new GatewayError('invalid_json', {
    reason: error.problem,
    offset: error.offset,
    ...(error.field ? { field: error.field } : {}),
  });
}

/**
 * Anthropic's create body `{"requests": [...]}` read as a stream: each request is found by the scanner, parsed
 * alone, and checked as the whole-body schema did (same codes, fields named `requests[i]...`), a custom_id used
 * twice and `params.stream: true` refused; what is yielded is ready to store. Throws the 4xx to answer.
 */
export async function* batchRequestsOf(
  raw: IncomingMessage,
  limits: BatchBodyLimits,
): AsyncGenerator<BatchRequestLine> {
  const validate = boundedValidatorCompiler()({ schema: requestSchema, method: 'POST', url: '', httpPart: 'body' });
  const seen = new Set<string>();
  const items = jsonArrayItems(boundedBody(raw, limits.maxCreateBytes), {
    key: 'requests',
    maxItemBytes: limits.maxLineBytes,
  });
  let count: number;
  try {
    for (;;) {
      const next = await items.next();
      if (next.done) {
        count = next.value;
        break;
      }
      yield lineOf(next.value, validate, seen);
    }
  } catch (error) {
    if (error instanceof JsonItemsError) throw refusal(error, limits.maxLineBytes);
    throw error;
  }
  if (count === 0)
    throw new GatewayError('validation_failed', {
      errors: [{ field: 'requests', problem: 'must NOT have fewer than 1 items' }],
    });
}

type Validate = ReturnType<ReturnType<typeof boundedValidatorCompiler>>;

/**
 * One batch request's JSON read as the gateway's body parser reads a whole body (json-body.ts `readJson`): the same
 * refusals of a key sent twice, a nesting too deep and prototype-poisoning keys, each with its reason (text that is
 * not JSON has none). Anthropic's requests and OpenAI's input lines (core/batches/batch-validate.ts) both go
 * through it.
 */
export function readBatchJson(text: string): { ok: true; value: unknown } | { ok: false; reason?: string } {
  const read = readJson(text);
  if (read.ok) return read;
  if ('shape' in read)
    return {
      ok: false,
      reason:
        read.shape.kind === 'too_deep'
          ? `nested deeper than ${MAX_JSON_DEPTH} levels`
          : `the key "${read.shape.key.slice(0, 100)}" appears more than once${read.shape.path === '' ? '' : ` in ${read.shape.path.slice(0, 200)}`}`,
    };
  return read.poisoned ? { ok: false, reason: POISONED_KEYS } : { ok: false };
}

function lineOf(item: JsonItem, validate: Validate, seen: Set<string>): BatchRequestLine {
  const field = `requests[${item.index}]`;
  const read = readBatchJson(item.text);
  if (!read.ok)
    throw new GatewayError('invalid_json', { reason: read.reason ?? 'not valid JSON', field, offset: item.offset });
  const request = read.value as { custom_id: string; params: Record<string, unknown> };
  try {
    assertValid(validate, request);
  } catch (error) {
    throw isGatewayError(error) ? underField(error, field) : error;
  }
  if (seen.has(request.custom_id))
    throw new GatewayError('batch_input_invalid', {
      field: `${field}.custom_id`,
      problem: 'used by an earlier request',
    });
  seen.add(request.custom_id);
  if (request.params.stream === true)
    throw new GatewayError('batch_input_invalid', {
      field: `${field}.params.stream`,
      problem: 'a batch request cannot stream',
    });
  return { customId: request.custom_id, body: JSON.stringify(request.params), model: String(request.params.model) };
}

/** A request's `validation_failed` with its fields named from the body: `custom_id` becomes `requests[3].custom_id`. */
function underField(error: GatewayError, field: string): GatewayError {
  const errors = (error.details.errors as FieldProblem[] | undefined)?.map((problem) => ({
    ...problem,
    field: problem.field === 'body' ? field : `${field}.${problem.field}`,
  }));
  return new GatewayError(error.code, { ...error.details, ...(errors ? { errors } : {}) });
}
