/** A fixture's value once its before() hook set it; a clear error when a test reads it too early. */
export function started<T>(value: T | undefined, fixture: string): T {
  if (value === undefined) throw new Error(`${fixture}: used before its before() hook ran`);
  return value;
}
