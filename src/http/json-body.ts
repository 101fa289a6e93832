import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import secureJson from 'secure-json-parse';
import { locateJsonError, lineAndColumn } from './json-error-position.js';
import { MAX_JSON_DEPTH, checkJsonShape, type JsonShapeProblem } from './json-shape.js';

const BYTE_ORDER_MARK = 0xfeff;

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
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
      done(
        new GatewayError('unsupported_media_type', {
          accepted: ['application/json'],
          content_encoding: 'only identity (no compression) is accepted',
        }),
      );
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
    let parsed: unknown;
    try {
      // secure-json-parse: JSON.parse plus a refusal of "__proto__" and "constructor.prototype" keys, the
      // prototype-poisoning check Fastify's default parser has (a fast regex pre-check keeps the cost low).
      parsed = secureJson.parse(text, null, { protoAction: 'error', constructorAction: 'error' }) as unknown;
    } catch (error) {
      done(new GatewayError('invalid_json', describeFailure(text, error)));
      return;
    }
    const shape = typeof parsed === 'object' && parsed !== null ? checkJsonShape(text) : undefined;
    if (shape) {
      done(new GatewayError('invalid_json', describeShape(text, shape)));
      return;
    }
    request.rawBody = text;
    done(null, parsed);
  };
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: bodyLimitBytes }, parse);
  app.addContentTypeParser(/^application\/[\w.+-]+\+json$/, { parseAs: 'string', bodyLimit: bodyLimitBytes }, parse);
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

function describeFailure(text: string, error: unknown): Record<string, unknown> {
  if (text.trim() === '') return { reason: 'the body is empty' };
  if (!(error instanceof SyntaxError) || /prototype property|forbidden/i.test((error as Error).message)) {
    return { reason: 'keys named "__proto__" or "constructor.prototype" are not accepted' };
  }
  return { ...locateJsonError(text) };
}
