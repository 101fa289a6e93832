/**
 * The entry point of the token-counting thread, which token-counter.ts starts on the first count that needs a BPE.
 * The gateway's own thread never loads a tokenizer: counting runs here (token-count-lane.ts).
 */
import { parentPort } from 'node:worker_threads';
import { serveTokenCounts, type CountPort } from './token-count-lane.js';

if (parentPort) serveTokenCounts(parentPort as unknown as CountPort);
