import { randomBytes } from 'node:crypto';

const POOL_SIZE = 10 * 256;
let pool = Buffer.alloc(0);
let offset = POOL_SIZE;

/**
 * `evt_` + 32 hex digits: 12 of milliseconds since 1970 then 20 random (80 bits), like a UUIDv7. Time-ordered ids
 * sort by creation for receivers and are appended at the end of the outbox's primary-key index instead of at
 * random places in it (random keys made every event write touch a different index page: most of the outbox's
 * cost under load). Randomness is drawn in blocks.
 */
export function newEventId(nowMs = Date.now()): string {
  if (offset + 10 > POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    offset = 0;
  }
  const random = pool.toString('hex', offset, offset + 10);
  offset += 10;
  return `evt_${Math.floor(nowMs).toString(16).padStart(12, '0')}${random}`;
}
