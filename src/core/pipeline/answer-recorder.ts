/**
 * What a call that may be answered again later reports when it ends: an Idempotency-Key's claim (its replay), the
 * response cache's entry, or both. The route that runs the call feeds it; each keeps what fits its own bound.
 */
export interface AnswerRecorder {
  /** The largest answer kept (UTF-8 bytes); a larger one is not stored (and frees an Idempotency-Key). */
  readonly maxBytes: number;
  json(status: number, headers: Record<string, string>, body: string): Promise<void>;
  /** A stream that ended well: its full text, and its headers (its content type). */
  stream(headers: Record<string, string>, text: string): Promise<void>;
  /** The answer outgrew `maxBytes`: it will not be stored (said in the access line); `failed` frees the key. */
  tooLarge(): void;
  /** The call failed in a way a retry may fix (5xx, timeout, cut stream, client gone): free the key. */
  failed(): Promise<void>;
}

/** One recorder feeding two (Idempotency-Key and the cache): each keeps what fits its own bound. */
export function bothRecorders(
  a: AnswerRecorder | undefined,
  b: AnswerRecorder | undefined,
): AnswerRecorder | undefined {
  if (!a || !b) return a ?? b;
  return {
    maxBytes: Math.max(a.maxBytes, b.maxBytes),
    json: async (status, headers, body) => {
      await Promise.all([a.json(status, headers, body), b.json(status, headers, body)]);
    },
    stream: async (headers, text) => {
      await Promise.all([a.stream(headers, text), b.stream(headers, text)]);
    },
    tooLarge: () => {
      a.tooLarge();
      b.tooLarge();
    },
    failed: async () => {
      await Promise.all([a.failed(), b.failed()]);
    },
  };
}
