/**
 * A store that cannot be reached or used right now (a file locked past its busy timeout, a full disk, Redis down
 * or failing over), as opposed to an error in what was asked of it (a value it cannot hold, a broken script, a bug
 * of ours). Only an outage may let a call through unchecked (`limits.on_store_failure: open`): an error in the
 * value would be raised again by every later call, and failing open on it switched a key's limits off for good.
 * The limiter stores wrap their store steps in `outageAware`, and the rate-limit service fails open
 * only on a StoreOutageError.
 */
export class StoreOutageError extends Error {
  override readonly name = 'StoreOutageError';
  constructor(
    /** `sqlite` or `redis`: which store. */
    readonly store: string,
    cause: unknown,
  ) {
    super(`the ${store} store is unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

export function isStoreOutage(error: unknown): error is StoreOutageError {
  return error instanceof StoreOutageError;
}

/**
 * SQLite's primary result codes (https://www.sqlite.org/rescode.html) that say the file cannot be used now, not
 * that a statement or a value is wrong: BUSY, LOCKED, NOMEM, READONLY, IOERR, CORRUPT, FULL, CANTOPEN, PROTOCOL,
 * NOTADB. Extended codes keep the primary one in their low byte (SQLITE_IOERR_FSYNC is 1034 = 10 | 4 << 8).
 */
const SQLITE_OUTAGE_CODES = new Set([5, 6, 7, 8, 10, 11, 13, 14, 15, 26]);

/** True for a node:sqlite error that is an outage of the file (see SQLITE_OUTAGE_CODES), or a closed database. */
export function isSqliteOutage(error: unknown): boolean {
  const { errcode, code } = (error ?? {}) as { errcode?: unknown; code?: unknown };
  if (typeof errcode === 'number') return SQLITE_OUTAGE_CODES.has(errcode & 0xff);
  // node:sqlite's "database is not open": the store was closed under a call (at shutdown).
  return code === 'ERR_INVALID_STATE';
}

/** Socket-level error codes: the connection to Redis failed, not the command. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * Redis replies that say the server cannot serve now (loading, a script running too long, a replica during
 * failover, out of memory, no majority, credentials refused): https://redis.io/docs/latest/develop/reference/protocol-spec/#simple-errors.
 * `ERR ...` (a script error, a value out of range) and `NOSCRIPT` (handled by ioredis) are not among them.
 */
const REDIS_OUTAGE_REPLIES =
  /^(LOADING|BUSY|READONLY|MASTERDOWN|OOM|NOREPLICAS|CLUSTERDOWN|TRYAGAIN|NOAUTH|WRONGPASS|NOPERM|MISCONF)\b/;

/** ioredis's own messages when it has no usable connection (enableOfflineQueue is off, maxRetriesPerRequest 1). */
const IOREDIS_DISCONNECTED =
  /^(Connection is closed|Stream isn't writeable|Command timed out|Socket timeout|connect ETIMEDOUT|Ready check failed|Reached the max retries per request limit)/;

/** True for an ioredis error that is an outage of the server or the connection, not an error of the command. */
export function isRedisOutage(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  if (error.name === 'MaxRetriesPerRequestError') return true;
  if (error.name === 'ReplyError') return REDIS_OUTAGE_REPLIES.test(error.message);
  return IOREDIS_DISCONNECTED.test(error.message);
}

/**
 * Runs one store step; an outage (by `isOutage`) is rethrown as a StoreOutageError, anything else as it is.
 * Errors thrown before the step reaches the store (a bad number, a bug) are never outages.
 */
export async function outageAware<T>(
  store: string,
  isOutage: (error: unknown) => boolean,
  step: () => Promise<T>,
): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw isOutage(error) ? new StoreOutageError(store, error) : error;
  }
}
