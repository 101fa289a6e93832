import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { isLingering } from './lingering-close.js';

type ReadableRequest = IncomingMessage & { _read: (size: number) => void };

/**
 * `Expect: 100-continue` (RFC 9110 section 10.1.1): a client asks whether to send its body before sending it. Node
 * answers `100 Continue` at once, before anything is checked, so a caller without a key, a path to nowhere or a
 * part for a completed upload was invited to send its whole body, which the refusal then had to read and discard
 * (http/lingering-close.ts). Here the request is dispatched without it, and `100 Continue` is written only when
 * something first reads the body: a refusal answered before that (401, 403, 404, 409...) is the client's only
 * answer, and a client that waits sends no body at all. Never after the final answer has begun, nor on a
 * connection already refused.
 */
export function continueOnFirstRead(server: Server): void {
  server.on('checkContinue', function continueWhenRead(req: IncomingMessage, res: ServerResponse) {
    const request = req as ReadableRequest;
    const read = request._read;
    request._read = function readAfterContinue(size: number) {
      request._read = read;
      if (!res.headersSent && !res.writableEnded && !isLingering(req.socket)) res.writeContinue();
      read.call(request, size);
    };
    server.emit('request', req, res);
  });
}
