import type { VectorFileErrorCode } from '../../store/vector-contract.js';

/** Why a file gives no text: OpenAI's `last_error` codes a file's own content earns (`server_error` is ours). */
export interface DocumentError {
  code: Exclude<VectorFileErrorCode, 'server_error'>;
  message: string;
}

/** A document's text, or why it has none. `truncated`: the document had more than `maxChars` (or `maxPages`). */
export type ParsedText = { text: string; truncated: boolean } | { error: DocumentError };

/** What reading one document may cost. */
export interface ReadLimits {
  maxChars: number;
  /** PDF pages read at most (the text of the rest is left out, as past `maxChars`). */
  maxPages: number;
  /** When reading gives up (performance.now() time): the file is then `invalid_file`. */
  deadline: number;
  /** Calls reading off (the ingestion was cancelled): the read rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/** A parser ran past its read's deadline. */
export class ReadTimeout extends Error {
  constructor(readonly seconds: number) {
    super(`reading it took longer than ${seconds} s`);
  }
}

/**
 * `work`, or a rejection once the read's deadline passes or its signal aborts, whichever comes first. A parser's
 * own promise cannot be stopped from outside; the caller destroys what it can (pdf.js's loading task) when this
 * rejects, and stops waiting either way.
 */
export function bounded<T>(work: Promise<T>, limits: ReadLimits, seconds: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const { signal } = limits;
    const onAbort = () => reject(signal?.reason as Error);
    const timer = setTimeout(() => reject(new ReadTimeout(seconds)), Math.max(0, limits.deadline - performance.now()));
    signal?.addEventListener('abort', onAbort, { once: true });
    // Settles this promise if nothing below did first; a late rejection of `work` (its task destroyed) is handled.
    void work.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    });
    if (signal?.aborted) onAbort();
    // Past the deadline already: no parser step more is waited for (a timer of 0 could still lose the race).
    else if (performance.now() >= limits.deadline) reject(new ReadTimeout(seconds));
  });
}

/** A parser's reason for refusing a file, fit for `last_error.message`: its first line, no stack, bounded. */
export function parserReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const line = (message.split('\n', 1)[0] ?? '').replace(/\s+/g, ' ').trim();
  return (line.length > 200 ? `${line.slice(0, 200)}...` : line) || 'unreadable';
}
