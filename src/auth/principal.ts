import type { LimitSet } from '../config/types.js';
import type { Budget } from '../core/rate-limit-service.js';

/** Who is calling and what they may do. `undefined` rights mean "everything" (the admin token). */
export interface Principal {
  /** The id limits, idempotency and events are kept under: `admin`, or `key:<key id>`. */
  caller: string;
  kind: 'admin' | 'key' | 'oauth' | 'basic';
  routes?: ReadonlySet<string>;
  models?: ReadonlySet<string>;
  /** The key's own per-caller limits (replacing the configured ones). */
  limits?: LimitSet;
  /** Tokens and/or cost per rolling period. */
  budget?: Budget;
}

export const ADMIN: Principal = { caller: 'admin', kind: 'admin' };

/** A model id the principal may call (the id it used, or the model an alias stands for). */
export function modelAllowed(principal: Principal, ...ids: ReadonlyArray<string | undefined>): boolean {
  return principal.models === undefined || ids.some((id) => id !== undefined && principal.models?.has(id) === true);
}
