/**
 * The entry point of the thread that reads the config again for a live reload (config-thread.ts starts it): it
 * validates the environment and the config file with zod, as at start, and posts the validated config (or the
 * problems) to the serving thread, then ends.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ConfigError } from '../config/config-error.js';
import { loadConfig } from '../config/load.js';
import type { ChildReply } from './config-from-child.js';

function read(version: string): ChildReply {
  try {
    return { config: loadConfig(process.env, { version }) };
  } catch (error) {
    if (error instanceof ConfigError) return { problems: error.problems };
    return { error: (error as Error).stack ?? String(error) };
  }
}

if (parentPort) parentPort.postMessage(read(String((workerData as { version?: unknown }).version ?? '0.0.0')));
