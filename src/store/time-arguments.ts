/**
 * Checks of the time arguments every store takes. Whole milliseconds: SQLite keeps them in STRICT INTEGER
 * columns (which refuse fractions) and Lua compares them as doubles (exact for integers of this size).
 */
export function wholeMs(name: string, value: number): number {
  if (!Number.isFinite(value)) throw new RangeError(`${name} must be a finite number of milliseconds (got ${value})`);
  return Math.floor(value);
}

/** A lease or TTL of zero would expire at once and let every caller claim the key (and PEXPIRE needs > 0). */
export function durationMs(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0)
    throw new RangeError(`${name} must be a positive number of milliseconds (got ${value})`);
  return Math.ceil(value);
}
