/** First respawn delay; doubled for each quick death in a row, up to a cap. */
const BASE_DELAY_MS = 500;
/** Cap while workers fail to start (nothing is served anyway: give a late database or port time). */
const MAX_START_DELAY_MS = 8_000;
/** Cap once workers had been serving: the port must not stay closed long for a worker killed from outside. */
const MAX_SERVING_DELAY_MS = 2_000;
/** A worker that dies within this long of being forked counts as a quick death (the delay grows). */
const QUICK_DEATH_MS = 10_000;
/**
 * Workers in a row that died before listening after which the primary gives up: with the delays above that is
 * about 15 s of trying, enough for a database or a port that comes free a little late, short enough that a
 * broken deployment fails visibly instead of spinning forever.
 */
const MAX_START_FAILURES = 6;

/**
 * When the cluster primary replaces a dead worker. A worker that had been serving is always replaced (it may have
 * been killed from outside, or crashed on one request); deaths in quick succession back off exponentially so a
 * crash loop does not burn the CPU; only workers that never reached `listen` count towards giving up.
 */
export class RespawnPolicy {
  private quickDeaths = 0;
  private failures = 0;

  /** Workers in a row that died before listening. */
  get startFailures(): number {
    return this.failures;
  }

  /** A worker is listening: the configuration and the port work. */
  started(): void {
    this.failures = 0;
  }

  /** A worker died: the delay before forking its replacement, or undefined to give up. */
  died(wasListening: boolean, livedMs: number): number | undefined {
    if (wasListening) this.failures = 0;
    else this.failures += 1;
    if (this.failures >= MAX_START_FAILURES) return undefined;
    this.quickDeaths = livedMs < QUICK_DEATH_MS ? this.quickDeaths + 1 : 0;
    return Math.min(
      BASE_DELAY_MS * 2 ** Math.max(0, this.quickDeaths - 1),
      wasListening ? MAX_SERVING_DELAY_MS : MAX_START_DELAY_MS,
    );
  }
}
