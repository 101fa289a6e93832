import { fork } from 'node:child_process';
import { ConfigError } from '../config/config-error.js';
import type { GatewayConfig } from '../config/types.js';
import { loaderArguments } from '../core/tokens/loader-arguments.js';

/** What the config child answers: the validated config, the config's problems, or why it failed otherwise. */
export type ChildReply = { config: GatewayConfig } | { problems: string[] } | { error: string };

/**
 * Whether this process may become a cluster primary: WORKERS other than 1 in the environment, or a config file
 * (its `server.workers`) without WORKERS. Only then is the config read in a child (`readConfigInChild`); the
 * default start (no WORKERS, no file) reads it in-process as before, without the child's start-up time.
 */
export function mayRunWorkers(env: Readonly<Record<string, string | undefined>>): boolean {
  if (env.WORKERS !== undefined) return env.WORKERS.trim() !== '1';
  return env.GATEWAY_CONFIG !== undefined && env.GATEWAY_CONFIG !== '';
}

/**
 * The validated config, read by a child process (config-child.ts) so that this process never loads what
 * validating it takes (zod and the config sections: a large part of a cluster primary's idle footprint). The child
 * inherits the environment; the config comes back over its IPC channel as a structured clone (Maps kept). A bad
 * config throws the same ConfigError, with the same problems, as reading it in-process.
 */
export function readConfigInChild(version: string): Promise<GatewayConfig> {
  // Under a TypeScript loader (tsx: tests, `npm run dev`) this module is the .ts source; built, it is .js.
  const extension = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
  const child = fork(new URL(`./config-child.${extension}`, import.meta.url), [version], {
    execArgv: loaderArguments(process.execArgv),
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise<GatewayConfig>((resolve, reject) => {
    let reply: ChildReply | undefined;
    child.once('message', (message) => {
      reply = message as ChildReply;
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (reply === undefined)
        reject(new Error(`the config reader exited (code ${code}, signal ${signal}) without an answer`));
      else if ('config' in reply) resolve(reply.config);
      else if ('problems' in reply) reject(new ConfigError(reply.problems));
      // The child's stack, printed as if the failure had happened here.
      else reject(Object.assign(new Error(reply.error.split('\n')[0]), { stack: reply.error }));
    });
  });
}
