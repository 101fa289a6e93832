import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import { locateJsonError } from './json-error-position.js';

/**
 * The only body parser: JSON (application/json and any application/*+json, such as our vendor type). Every other
 * media type is a 415. A body that is not JSON is a 400 that says where parsing stopped.
 */
export function registerJsonParser(app: FastifyInstance, bodyLimitBytes: number): void {
  app.removeAllContentTypeParsers();
  const parse = (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, value?: unknown) => void) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      const details = text.trim() === '' ? { reason: 'the body is empty' } : { ...locateJsonError(text) };
      done(new GatewayError('invalid_json', details));
      return;
    }
    request.rawBody = text;
    done(null, parsed);
  };
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: bodyLimitBytes }, parse);
  app.addContentTypeParser(/^application\/[\w.+-]+\+json$/, { parseAs: 'string', bodyLimit: bodyLimitBytes }, parse);
}

