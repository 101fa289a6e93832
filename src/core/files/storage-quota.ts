import { GatewayError } from '../../errors/gateway-error.js';
import { isDiskFull } from '../../store/disk-full.js';
import type { StorageLimits, StorageUseStore } from '../../store/storage-use.js';

/** How far a reservation runs ahead of the bytes of a write whose size is not known in advance. */
export const RESERVATION_STEP_BYTES = 8 * 1024 * 1024;

/** The config keys the answers name (docs/config.md). */
export const PER_CALLER_QUOTA = 'files.quota_bytes_per_caller';
export const TOTAL_QUOTA = 'files.quota_bytes_total';

export interface StorageQuotaConfig {
  quotaBytesPerCaller: number;
  quotaBytesTotal: number;
  /** How long a reservation a crash left counts before the sweep ends it (renewed as its write grows). */
  reservationTtlMs: number;
}

/** Neither SDK retries a refusal that only freeing storage (or an operator) can lift. */
const NOT_RETRIED = { headers: { 'x-should-retry': 'false' } };

/** What a write reserves: `bytes` to start with (exact, or a guess a refusal may lower to `floor`), at most `maxBytes`. */
export interface ReservationRequest {
  /** An upper bound of the write's size (a Content-Length, a declared size); without it the write's size is unknown. */
  sizeHint?: number;
  /** The write's own bound: nothing past it is stored, so nothing past it is reserved. */
  maxBytes: number;
  /** False: bytes already counted elsewhere, or the gateway's own (an upload's assembled file, batch results). */
  checked: boolean;
}

/**
 * The storage quotas (docs/files.md, "Storage quotas"): every write of a file or an upload's part reserves its
 * bytes in the ledger (store/storage-use.ts) before its first byte is stored, and grows the reservation as its
 * bytes arrive; a write that does not fit is refused with the quota it would pass. Refusals:
 *
 * - `413 exceeds_storage_quota`: the write alone is larger than a quota (no deletion would make room).
 * - `429 storage_quota_exceeded`: the caller's stored bytes leave no room for it (`files.quota_bytes_per_caller`).
 * - `507 storage_full`: everyone's stored bytes leave no room for it (`files.quota_bytes_total`).
 */
export class StorageQuota {
  private readonly limits: StorageLimits;

  constructor(
    private readonly store: StorageUseStore | undefined,
    private readonly config: StorageQuotaConfig,
    private readonly now: () => number = Date.now,
  ) {
    this.limits = { perOwner: config.quotaBytesPerCaller, total: config.quotaBytesTotal };
  }

  /** Throws the refusal a write of `bytes` of `owner` would meet now; reserves nothing (an early, kind answer). */
  async assertRoom(owner: string, bytes: number): Promise<void> {
    this.assertFitsAlone(bytes);
    if (!this.store) return;
    const use = await this.store.use(owner);
    if (use.owner + bytes > this.limits.perOwner) throw this.refusal('owner', use.owner, bytes);
    if (use.total + bytes > this.limits.total) throw this.refusal('total', use.total, bytes);
  }

  /** Reserves room for the write `id` of `owner`; its `meter` grows the reservation with the bytes that pass. */
  async reserve(owner: string, id: string, request: ReservationRequest): Promise<StorageReservation> {
    const reservation = new StorageReservation(this, owner, id, request.maxBytes, request.checked);
    const hint = request.sizeHint === undefined ? undefined : Math.min(request.sizeHint, request.maxBytes);
    if (hint !== undefined) await reservation.growTo(hint, hint);
    else await reservation.growTo(Math.min(RESERVATION_STEP_BYTES, request.maxBytes), 0);
    return reservation;
  }

  /**
   * Raises `id`'s reservation to `bytes`, or when that is refused to `floor` (what the write needs right now);
   * throws the refusal when neither fits; answers the bytes now reserved. Unchecked: counted, never refused. The
   * reservation lasts until `expiresMs` (default: `reservationTtlMs` from now, renewed as a write grows).
   */
  async take({ owner, id, bytes, floor, checked, expiresMs }: QuotaTake): Promise<number> {
    if (!this.store) return bytes;
    expiresMs ??= this.now() + this.config.reservationTtlMs;
    try {
      if (!checked) {
        await this.store.reserve(id, owner, bytes, expiresMs);
        return bytes;
      }
      const outcome = await this.store.reserve(id, owner, bytes, expiresMs, this.limits);
      if (outcome.reserved) return bytes;
      const least = floor < bytes ? await this.store.reserve(id, owner, floor, expiresMs, this.limits) : outcome;
      if (least.reserved) return floor;
      this.assertFitsAlone(floor);
      throw this.refusal(least.limit, least.usedBytes, floor);
    } catch (error) {
      throw asDiskFull(error);
    }
  }

  /** Ends a reservation (its write failed); a failure to end it is left to the sweep (it expires). */
  async release(id: string): Promise<void> {
    await this.store?.release(id).catch(() => undefined);
  }

  private assertFitsAlone(bytes: number): void {
    const quota =
      bytes > this.limits.perOwner
        ? { quota: PER_CALLER_QUOTA, limit_bytes: this.limits.perOwner }
        : bytes > this.limits.total
          ? { quota: TOTAL_QUOTA, limit_bytes: this.limits.total }
          : undefined;
    if (quota) throw new GatewayError('exceeds_storage_quota', { ...quota, requested_bytes: bytes }, NOT_RETRIED);
  }

  private refusal(limit: 'owner' | 'total', usedBytes: number, requestedBytes: number): GatewayError {
    if (limit === 'total') {
      // What everyone stores is not a caller's to see: the quota's name and size only.
      return new GatewayError('storage_full', { quota: TOTAL_QUOTA, limit_bytes: this.limits.total }, NOT_RETRIED);
    }
    return new GatewayError(
      'storage_quota_exceeded',
      {
        quota: PER_CALLER_QUOTA,
        limit_bytes: this.limits.perOwner,
        used_bytes: usedBytes,
        requested_bytes: requestedBytes,
      },
      NOT_RETRIED,
    );
  }
}

/** What `StorageQuota.take` reserves: `bytes` of `id` for `owner`, or at least `floor`; `checked`: refused when over. */
export interface QuotaTake {
  owner: string;
  id: string;
  bytes: number;
  floor: number;
  checked: boolean;
  /** Until when the reservation lasts (default: the configured reservation TTL from now). */
  expiresMs?: number;
}

/** One write's reservation: grown by `meter` as the bytes pass, ended by the record's insert or by `release`. */
export class StorageReservation {
  private reserved = 0;

  constructor(
    private readonly quota: StorageQuota,
    private readonly owner: string,
    readonly id: string,
    private readonly maxBytes: number,
    private readonly checked: boolean,
  ) {}

  async growTo(bytes: number, floor: number): Promise<void> {
    const { owner, id, checked } = this;
    this.reserved = Math.max(this.reserved, await this.quota.take({ owner, id, bytes, floor, checked }));
  }

  /** Passes `content` on, growing the reservation before each chunk that would pass it (up to `maxBytes`). */
  async *meter(content: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    let counted = 0;
    for await (const chunk of content) {
      counted += chunk.byteLength;
      if (counted > this.reserved && counted <= this.maxBytes) {
        await this.growTo(Math.min(counted + RESERVATION_STEP_BYTES, this.maxBytes), counted);
      }
      yield chunk;
    }
  }

  release(): Promise<void> {
    return this.quota.release(this.id);
  }
}

/** A disk-full failure of a store (ENOSPC, SQLITE_FULL, PostgreSQL 53100) as `507 disk_full`; others unchanged. */
export function asDiskFull(error: unknown): unknown {
  if (error instanceof GatewayError || !isDiskFull(error)) return error;
  return new GatewayError('disk_full', {}, { ...NOT_RETRIED, cause: error });
}
