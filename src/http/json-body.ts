import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import secureJson from 'secure-json-parse';
import { locateJsonError, lineAndColumn } from './json-error-position.js';
import { MAX_JSON_DEPTH, checkJsonShape, type JsonShapeProblem } from './json-shape.js';

const BYTE_ORDER_MARK = 0xfeff;
/** The refusal of a body with prototype-poisoning keys. */
export const POISONED_KEYS = 'keys named "__proto__" or "constructor.prototype" are not accepted';

/** The media types of a JSON body: application/json and any application/*+json (such as our vendor type). */
export const JSON_MEDIA_TYPES: ReadonlyArray<string | RegExp> = ['application/json', /^application\/[\w.+-]+\+json$/];

/** A compressed body's refusal (`415`): only identity is accepted. Undefined when the body is not compressed. */
export function compressedBodyRefusal(headers: FastifyRequest['headers']): GatewayError | undefined {
  const encoding = headers['content-encoding'];
  if (encoding === undefined || encoding.toLowerCase() === 'identity') return undefined;
  return new GatewayError('unsupported_media_type', {
    accepted: ['application/json'],
    content_encoding: 'only identity (no compression) is accepted',
  });
}

/** What reading one JSON text found: its value, or why it is refused (not JSON, poisoned keys, its shape). */
export type JsonReading =
  | { ok: true; value: unknown }
  | { ok: false; error: unknown; poisoned: boolean }
  | { ok: false; shape: JsonShapeProblem };

/**
 * The gateway's one way to read JSON from a caller: secure-json-parse (JSON.parse plus a refusal of "__proto__" and
 * "constructor.prototype" keys, the prototype-poisoning check Fastify's default parser has; a fast regex pre-check
 * keeps the cost low), then the shape check of an object or array (depth, a key sent twice).
 */
export function readJson(text: string): JsonReading {
  let value: unknown;
  try {
    value = secureJson.parse(text, null, { protoAction: 'error', constructorAction: 'error' }) as unknown;
  } catch (error) {
    const poisoned = !(error instanceof SyntaxError) || /prototype property|forbidden/i.test((error as Error).message);
    return { ok: false, error, poisoned };
  }
  const shape = typeof value === 'object' && value !== null ? checkJsonShape(text) : undefined;
  return shape ? { ok: false, shape } : { ok: true, value };
}

/**
 * The only body parser: JSON (application/json and any application/*+json, such as our vendor type). Every other
 * media type is a 415. A body that is not JSON is a 400 that says where parsing stopped.
 */
export function registerJsonParser(app: FastifyInstance, bodyLimitBytes: number): void {
  app.removeAllContentTypeParsers();
  const parse = (
    request: FastifyRequest,
    body: string | Buffer,
    done: (err: Error | null, value?: unknown) => void,
  ) => {
    const refusal = compressedBodyRefusal(request.headers);
    if (refusal) {
      done(refusal);
      return;
    }
    let text = typeof body === 'string' ? body : body.toString('utf8');
    if (text === '' && request.method !== 'POST') {
      done(null, undefined); // a DELETE (or GET) sent with a JSON Content-Type and no body: nothing to read
      return;
    }
    // RFC 8259 section 8.1 lets a parser ignore a leading byte order mark (some Windows tools write one). It is
    // dropped from the text that is forwarded too: an upstream may refuse it.
    if (text.charCodeAt(0) === BYTE_ORDER_MARK) text = text.slice(1);
    const read = readJson(text);
    if (!read.ok) {
      done(
        new GatewayError(
          'invalid_json',
          'shape' in read ? describeShape(text, read.shape) : describeFailure(text, read),
        ),
      );
      return;
    }
    request.rawBody = text;
    done(null, read.value);
  };
  for (const type of JSON_MEDIA_TYPES)
    app.addContentTypeParser(type, { parseAs: 'string', bodyLimit: bodyLimitBytes }, parse);
}

function describeShape(text: string, problem: JsonShapeProblem): Record<string, unknown> {
  const where = { position: problem.position, ...lineAndColumn(text, problem.position) };
  if (problem.kind === 'too_deep') {
    return { reason: `the body is nested deeper than ${MAX_JSON_DEPTH} levels`, max_depth: MAX_JSON_DEPTH, ...where };
  }
  const key = problem.key.slice(0, 100);
  const path = problem.path.slice(0, 200);
  const place = path === '' ? 'at the top level' : `in ${path}`;
  return {
    reason: `the key "${key}" appears more than once ${place} (each field must be sent once)`,
    key,
    path,
    ...where,
  };
}

function describeFailure(text: string, failure: { poisoned: boolean }): Record<string, unknown> {
  if (text.trim() === '') return { reason: 'the body is empty' };
  if (failure.poisoned) return { reason: POISONED_KEYS };
  return { ...locateJsonError(text) };
}
