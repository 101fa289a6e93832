import { setImmediate as nextTurn } from 'node:timers/promises';

/** The longest a step of document work holds the event loop before it lets other work run. */
export const SLICE_MS = 5;

/**
 * A clock for long work on the gateway's own thread (decoding, HTML scanning, tokenizing a large document): the
 * loop asks `due()` between small steps (cheap: one clock read) and, when it is, awaits `pause()`, a setImmediate
 * turn, so timers, sockets and other requests run between slices.
 */
export class LoopSlice {
  private ends = performance.now() + SLICE_MS;

  constructor(private readonly signal?: AbortSignal) {}

  due(): boolean {
    return performance.now() >= this.ends;
  }

  /** Lets the loop turn once; throws the signal's reason when the work was called off meanwhile. */
  async pause(): Promise<void> {
    await nextTurn();
    this.signal?.throwIfAborted();
    this.ends = performance.now() + SLICE_MS;
  }
}
