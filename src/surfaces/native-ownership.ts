import { GatewayError } from '../errors/gateway-error.js';
import type { NativeOwnerStore } from '../store/store-contract.js';

/** An id of the upstream's that a natively forwarded request refers to, and the field it is in (for the 404). */
export interface NativeReference {
  id: string;
  field: string;
  /**
   * The API's own cause for the 404 of this reference, its `details.error_details` (Anthropic's `{error_code:
   * "thread_not_found"}` for a thread's message, which its SDKs recover from by starting a new thread).
   */
  errorDetails?: Record<string, unknown>;
}

export interface OwnershipLog {
  warn(fields: Record<string, unknown>, msg: string): void;
}

/** The longest id ever recorded (providers/native-passthrough.ts): a longer reference is unknown without a lookup. */
const MAX_ID_CHARS = 256;

/**
 * Who may refer to the ids an upstream keeps for natively forwarded calls. The upstream keeps a response made
 * through the gateway under the gateway's account, where any caller's `previous_response_id` would reach it; so
 * the gateway records the caller that made each id and forwards a reference only from that caller. Anyone else's
 * id, and an id the gateway never saw made (created at the provider directly, expired here, or made while the
 * store was down), is the same `404 response_not_found` as an unknown one, before anything is sent upstream.
 */
export class NativeOwnership {
  constructor(private readonly options: { store: NativeOwnerStore | undefined; ttlMs: number; log: OwnershipLog }) {}

  /** Refuses a request that refers to an id not recorded as this caller's (404); the store down is a 503. */
  async check(caller: string, references: readonly NativeReference[]): Promise<void> {
    if (references.length === 0) return;
    const ids = [...new Set(references.map((reference) => reference.id))];
    let missing = ids.find((id) => id.length > MAX_ID_CHARS) ?? (this.options.store ? undefined : ids[0]);
    if (missing === undefined && this.options.store) {
      try {
        missing = await this.options.store.firstNotOwned(caller, ids);
      } catch (error) {
        throw new GatewayError('response_store_unavailable', {}, { cause: error });
      }
    }
    if (missing === undefined) return;
    const reference = references.find((candidate) => candidate.id === missing);
    throw new GatewayError('response_not_found', {
      id: missing.slice(0, MAX_ID_CHARS),
      ...(reference ? { field: reference.field } : {}),
      ...(reference?.errorDetails ? { error_details: reference.errorDetails } : {}),
    });
  }

  /**
   * Records the caller as the owner of ids a forwarded answer named. Never fails the call: with the store down the
   * answer still goes out, and a later reference to these ids is a 404 (logged here).
   */
  async record(caller: string, ids: readonly string[]): Promise<void> {
    if (!this.options.store || ids.length === 0) return;
    try {
      await this.options.store.claim(caller, ids, this.options.ttlMs);
    } catch (error) {
      this.options.log.warn(
        { err: error, ids: ids.length },
        'native ids not recorded: the store failed; they cannot be referred to again',
      );
    }
  }
}
