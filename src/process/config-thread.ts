import { Worker } from 'node:worker_threads';
import { ConfigError } from '../config/config-error.js';
import type { GatewayConfig } from '../config/types.js';
import { loaderArguments } from '../core/tokens/loader-arguments.js';
import type { ChildReply } from './config-from-child.js';

/** A reload's read gives up past this (the thread is stopped): every file it reads is bounded, so it never should. */
export const CONFIG_THREAD_TIMEOUT_MS = 30_000;
/** A backstop for the thread's heap: a 4 MiB YAML file parses into far less. Past it the thread dies, the reload is refused. */
const CONFIG_THREAD_HEAP_MB = 256;

/**
 * The config file (and every file it names) read and validated again for a live reload, on a thread of its own
 * (config-thread-entry.ts): the reads, the YAML or JSON parse of up to 4 MiB, the price catalog and zod never hold
 * the serving thread's event loop, and a thread that takes too long or too much memory is stopped and the reload
 * refused (a bad reload changes nothing). The config comes back as a structured clone (Maps kept), as from the
 * config child at start; a bad file rejects with the same ConfigError, with the same problems.
 */
export function readConfigInThread(
  version: string,
  timeoutMs: number = CONFIG_THREAD_TIMEOUT_MS,
): Promise<GatewayConfig> {
  // Under a TypeScript loader (tsx: tests, `npm run dev`) this module is the .ts source; built, it is .js.
  const extension = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
  const thread = new Worker(new URL(`./config-thread-entry.${extension}`, import.meta.url), {
    workerData: { version },
    execArgv: loaderArguments(process.execArgv),
    resourceLimits: { maxOldGenerationSizeMb: CONFIG_THREAD_HEAP_MB },
  });
  return new Promise<GatewayConfig>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
      void thread.terminate();
    };
    const timer = setTimeout(
      () =>
        settle(() =>
          reject(new ConfigError([`the config reader thread did not answer within ${timeoutMs / 1000} s: stopped`])),
        ),
      timeoutMs,
    );
    thread.once('message', (reply: ChildReply) =>
      settle(() => {
        if ('config' in reply) resolve(reply.config);
        else if ('problems' in reply) reject(new ConfigError(reply.problems));
        else reject(Object.assign(new Error(reply.error.split('\n')[0]), { stack: reply.error }));
      }),
    );
    thread.once('error', (error) =>
      settle(() => reject(new ConfigError([`the config reader thread failed: ${error.message}`]))),
    );
    thread.once('exit', (code) =>
      settle(() => reject(new ConfigError([`the config reader thread exited (code ${code}) without an answer`]))),
    );
  });
}
