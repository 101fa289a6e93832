/**
 * The entry point of a document-reading thread (extract-off-thread.ts starts one per document): it reads the one
 * document it is sent and answers with its text or its error. pdf.js and mammoth load here, not on the gateway's
 * thread, and whatever they hold (a page's parse, a part's XML) holds only this thread.
 */
import { parentPort } from 'node:worker_threads';
import { extractText, type ExtractRequest } from './document-text.js';

export type ThreadRequest = Omit<ExtractRequest, 'signal'>;

if (parentPort) {
  const port = parentPort;
  port.once('message', (request: ThreadRequest) => {
    void extractText(request).then((result) => port.postMessage(result));
  });
}
