import { createRequire } from 'node:module';
import type * as Undici from 'undici';

/**
 * The two undici dispatchers the gateway uses (a Pool per upstream, the webhooks' Agent), loaded from undici's own
 * modules instead of its index, which also loads fetch, WebSocket, the cache and mock agents, proxies and more
 * (110 modules; 31 this way): ~5 MB of each serving process's idle RSS (a worker 103 -> 98 MB; undici alone
 * 68.1 -> 59.6 MB; issue 33).
 *
 * This is what undici's index.js does for these two (same modules, same prototype methods). package-lock.json
 * fixes undici's version; a change of its layout fails at start-up and in every upstream call test at once.
 */
const require = createRequire(import.meta.url);
const Dispatcher = require('undici/lib/dispatcher/dispatcher.js') as { prototype: object };
// Dispatcher.prototype.request, .stream, .pipeline...: as undici's index.js does before exporting anything.
Object.assign(Dispatcher.prototype, require('undici/lib/api/index.js') as object);

export const Pool = require('undici/lib/dispatcher/pool.js') as typeof Undici.Pool;
export type Pool = Undici.Pool;
export const Agent = require('undici/lib/dispatcher/agent.js') as typeof Undici.Agent;
export type Agent = Undici.Agent;
