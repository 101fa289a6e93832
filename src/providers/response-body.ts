import type { Dispatcher } from 'undici';

type Body = Dispatcher.ResponseData['body'];

/**
 * Reads a response body as UTF-8 text, refusing (and destroying) bodies larger than `maxBytes`. With
 * `truncate`, an over-long body is cut instead (for error bodies, where the start is all we need).
 */
export async function readBodyText(body: Body, maxBytes: number, truncate = false): Promise<string> {
  return (await readBodyBytes(body, maxBytes, truncate)).toString('utf8');
}

/** Reads a response body as bytes, with the same size rule as readBodyText. */
export async function readBodyBytes(body: Body, maxBytes: number, truncate = false): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > maxBytes) {
      discardBody(body);
      if (truncate) break;
      throw Object.assign(new Error('upstream body larger than allowed'), {
        code: 'UND_ERR_RESPONSE_EXCEEDED_MAX_SIZE',
      });
    }
    chunks.push(buffer);
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
}

/** Consumes what is left of a body we do not need, so its keep-alive connection can be reused. */
export function drainQuietly(body: Body): void {
  body.dump({ limit: 64 * 1024 }).catch(() => undefined);
}

/**
 * Cuts a body we stop reading before its end. undici's body emits an 'error' (RequestAbortedError) when it is
 * destroyed unfinished, and once a for-await loop has left it nothing listens any more: that 'error' would be
 * an uncaught exception that kills the process (a bad first frame followed by the upstream closing did exactly
 * that). The listener is added before the destroy, so the error always has somewhere to go.
 */
export function discardBody(body: Body): void {
  if (body.destroyed) return;
  body.on('error', ignoreError);
  body.destroy();
}

function ignoreError(): void {
  // the body is being thrown away: its abort is expected and carries nothing to report
}
