import { createRequire } from 'node:module';
import type * as Undici from 'undici';

/**
 * The two undici dispatchers the gateway uses (a Pool per upstream, the webhooks' Agent), loaded from undici's own
 * modules instead of its index, which also loads fetch, WebSocket, the cache and mock agents, proxies and more
 * (docs/benchmarks.md, "undici's dispatchers without its index"). These paths are undici's internals, not its
 * public API: package.json pins undici exactly, and `installUndiciPatch()` (called by the server at start) checks
 * the layout it relies on and fails with an error naming the installed version before anything is served.
 * Nothing here runs at import time.
 */
export type Pool = Undici.Pool;
export type Agent = Undici.Agent;

/** The undici release this layout was read from; package.json pins the same version (test/net/undici-shape.test.ts). */
export const UNDICI_VERSION = '7.30.2';

/** What undici's index.js copies onto `Dispatcher.prototype` before exporting anything. */
const API_METHODS = ['request', 'stream', 'pipeline', 'upgrade', 'connect'] as const;

const MODULES = {
  dispatcher: 'lib/dispatcher/dispatcher.js',
  api: 'lib/api/index.js',
  pool: 'lib/dispatcher/pool.js',
  agent: 'lib/dispatcher/agent.js',
} as const;

/** Loads a file of the undici package by its path inside it (`package.json`, `lib/...`). */
export type UndiciLoader = (path: string) => unknown;

export interface UndiciDispatchers {
  Pool: typeof Undici.Pool;
  Agent: typeof Undici.Agent;
}

const require = createRequire(import.meta.url);
const loadInstalled: UndiciLoader = (path) => require(`undici/${path}`);

/**
 * Loads Pool and Agent from undici's modules and gives `Dispatcher.prototype` the request methods, as undici's
 * index.js does (same modules, same methods); throws, changing nothing, when the modules are not what this was
 * written for.
 */
export function loadUndiciDispatchers(load: UndiciLoader = loadInstalled): UndiciDispatchers {
  const version = readVersion(load);
  const fail = (what: string) =>
    new Error(
      `undici ${version} is installed (src/net/undici.ts expects the internal modules of undici ${UNDICI_VERSION}): ` +
        `${what}. Install undici ${UNDICI_VERSION} (npm ci), or update src/net/undici.ts for ${version}.`,
    );
  const loaded: Record<keyof typeof MODULES, unknown> = { dispatcher: null, api: null, pool: null, agent: null };
  for (const key of Object.keys(MODULES) as (keyof typeof MODULES)[]) {
    try {
      loaded[key] = load(MODULES[key]);
    } catch (error) {
      throw fail(`cannot load undici/${MODULES[key]} (${(error as Error).message.split('\n')[0]})`);
    }
  }
  const { dispatcher, api, pool, agent } = loaded;
  if (!isClass(dispatcher)) throw fail(`undici/${MODULES.dispatcher} does not export the Dispatcher class`);
  const missing = API_METHODS.filter((name) => typeof (api as Record<string, unknown> | null)?.[name] !== 'function');
  if (missing.length > 0) throw fail(`undici/${MODULES.api} does not export ${missing.join(', ')}`);
  for (const [name, value] of [
    ['Pool', pool],
    ['Agent', agent],
  ] as const) {
    if (!isClass(value) || !Object.prototype.isPrototypeOf.call(dispatcher.prototype, value.prototype))
      throw fail(
        `undici/${MODULES[name === 'Pool' ? 'pool' : 'agent']} does not export a ${name} that extends Dispatcher`,
      );
  }
  Object.assign(dispatcher.prototype, api);
  return { Pool: pool as typeof Undici.Pool, Agent: agent as typeof Undici.Agent };
}

let installed: UndiciDispatchers | undefined;

/** Loads, checks and patches once per process; the server calls it at start so that a mismatch stops it there. */
export function installUndiciPatch(): UndiciDispatchers {
  return (installed ??= loadUndiciDispatchers());
}

export function createPool(origin: string, options: Undici.Pool.Options): Pool {
  return new (installUndiciPatch().Pool)(origin, options);
}

export function createAgent(options: Undici.Agent.Options): Agent {
  return new (installUndiciPatch().Agent)(options);
}

function readVersion(load: UndiciLoader): string {
  try {
    const version = (load('package.json') as { version?: unknown }).version;
    return typeof version === 'string' ? version : 'of an unknown version';
  } catch {
    return 'of an unknown version';
  }
}

function isClass(value: unknown): value is { prototype: object } {
  return typeof value === 'function' && typeof (value as { prototype?: unknown }).prototype === 'object';
}
