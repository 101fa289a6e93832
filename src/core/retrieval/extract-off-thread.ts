import { Worker } from 'node:worker_threads';
import { loaderArguments } from '../tokens/loader-arguments.js';
import { READ_TIMEOUT_MS, type ExtractRequest, type ExtractResult } from './document-text.js';
import type { ThreadRequest } from './document-text-thread.js';

/** The heap a reading thread may use; past it the thread dies and the file is `invalid_file`. */
export const THREAD_HEAP_MB = 512;
/** How long past its own deadline a thread may take to answer before it is ended from outside (at most half more). */
const GRACE_MS = 1_000;

/**
 * `extractText` on a thread of its own, one per document: the gateway's loop is never held by a parser (pdf.js
 * parses a page's content in one go: about 400 ms for a 3 MB page), and the read is bounded from outside, where a
 * parser cannot ignore it: the thread is ended at the deadline (plus a grace for its own answer) or when `signal`
 * aborts, and dies past THREAD_HEAP_MB. The first two answer `invalid_file`, an abort rejects with its reason. A
 * thread that fails otherwise rejects (a `server_error` for the file). Starting a thread costs tens of ms, and
 * pdf.js loads again in each (about 200 ms): fine for ingestion, which reads files in the background.
 */
export function extractTextOffThread(request: ExtractRequest): Promise<ExtractResult> {
  const { signal, ...rest } = request;
  signal?.throwIfAborted();
  const timeoutMs = request.timeoutMs ?? READ_TIMEOUT_MS;
  const seconds = Math.round(timeoutMs / 100) / 10;
  // Under a TypeScript loader (tsx: tests, `npm run dev`) this module is the .ts source; built, it is .js.
  const extension = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
  const worker = new Worker(new URL(`./document-text-thread.${extension}`, import.meta.url), {
    execArgv: loaderArguments(process.execArgv),
    resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
  });
  return new Promise<ExtractResult>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      void worker.terminate();
      outcome();
    };
    const refuse = (message: string) => settle(() => resolve({ error: { code: 'invalid_file', message } }));
    const onAbort = () => settle(() => reject(signal?.reason as Error));
    const grace = Math.min(GRACE_MS, timeoutMs / 2);
    const timer = setTimeout(() => refuse(`reading it took longer than ${seconds} s`), timeoutMs + grace);
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (result: ExtractResult) => settle(() => resolve(result)));
    worker.once('error', (error: Error & { code?: string }) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') refuse(`reading it needed more than ${THREAD_HEAP_MB} MB`);
      else settle(() => reject(error));
    });
    worker.once('exit', (code) =>
      settle(() => reject(new Error(`the document-reading thread exited with code ${code} before it answered`))),
    );
    worker.postMessage({ ...rest, timeoutMs } satisfies ThreadRequest);
  });
}
