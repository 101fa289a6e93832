/** Polls `check` (sync or async) every 10 ms until it holds; fails with `what` after `timeoutMs`. */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Reads `get` every 50 ms until `ok` holds of what it returned, and returns that; fails with the last value. */
export async function waitForValue<T>(
  what: string,
  get: () => T | Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await get();
    if (ok(value)) return value;
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for: ${what} (last: ${JSON.stringify(value)?.slice(0, 300)})`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
