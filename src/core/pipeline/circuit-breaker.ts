export type CircuitState = 'closed' | 'open' | 'half_open';

interface Circuit {
  failures: number;
  openedAt: number;
  /** The half-open probe running now (its permit's number), if any: other calls skip the target until it settles. */
  probe: number | undefined;
  /** When that probe's slot frees itself even if its call never settles (a lost call must not hold it forever). */
  probeUntil: number;
  /** When it first opened (a failed probe re-opens without a new transition). */
  firstOpenedAt?: number;
}

/** A circuit that opened (the upstream became unhealthy) or closed again after being open (it recovered). */
export type CircuitTransition =
  | { kind: 'opened'; upstream: string; failures: number; cooldownMs: number }
  | { kind: 'closed'; upstream: string; openForMs: number };

/**
 * The right to make one call to an upstream, and the duty to report how it went. Settled once: the first of
 * `success`, `failure` or `release` counts, later ones are ignored, so the caller can settle it in a `finally`
 * whatever ended the call (answer, error, timeout, the caller gone) without counting anything twice.
 */
export interface CircuitPermit {
  /** True for the half-open probe: the one call let through after the cooldown. */
  readonly probe: boolean;
  /** The upstream answered well: a probe closes the circuit; a closed circuit forgets earlier failures. */
  success(): void;
  /** The upstream failed: counts towards opening; a failed probe re-opens the circuit for another cooldown. */
  failure(): void;
  /** The call ended telling nothing about the upstream (the caller's mistake, the caller gone): a probe's slot is freed. */
  release(): void;
  /**
   * A stream's first chunk arrived: the upstream answers, so a probe closes the circuit at once (traffic resumes
   * without waiting for a long stream to end). The permit stays open for the stream's own outcome.
   */
  answered(): void;
}

/**
 * One circuit per upstream: after `failureThreshold` consecutive failures it opens and the upstream is skipped;
 * after `cooldownMs` one call is let through (half-open); its success closes the circuit, its failure opens it
 * again for another cooldown, and a probe that tells nothing (its caller left) frees the slot for the next call.
 * Per instance, in memory: each gateway learns an upstream's health from its own calls.
 */
export class CircuitBreakers {
  private readonly circuits = new Map<string, Circuit>();
  private probes = 0;

  constructor(
    private readonly options: {
      failureThreshold: number;
      cooldownMs: number;
      onTransition?: (transition: CircuitTransition) => void;
    },
    private readonly now: () => number = Date.now,
  ) {}

  get cooldownMs(): number {
    return this.options.cooldownMs;
  }

  state(upstream: string): CircuitState {
    const circuit = this.circuits.get(upstream);
    if (!circuit || circuit.failures < this.options.failureThreshold) return 'closed';
    return this.now() - circuit.openedAt >= this.options.cooldownMs ? 'half_open' : 'open';
  }

  /**
   * A permit to call `upstream` now, or undefined when its circuit is open. In half-open state only the first
   * asker gets one (the probe), held at most `leaseMs` (the call's own time budget and a margin): a probe whose
   * call is lost without settling cannot keep the upstream shut.
   */
  acquire(upstream: string, leaseMs: number): CircuitPermit | undefined {
    const state = this.state(upstream);
    if (state === 'open') return undefined;
    if (state === 'closed') return new Permit(this, upstream, undefined);
    const circuit = this.circuits.get(upstream);
    const now = this.now();
    if (!circuit || (circuit.probe !== undefined && now < circuit.probeUntil)) return undefined;
    circuit.probe = ++this.probes;
    circuit.probeUntil = now + leaseMs;
    return new Permit(this, upstream, circuit.probe);
  }

  /** Frees the probe slot held by permit number `probe` (not a later probe's, should this one have expired). */
  releaseProbe(upstream: string, probe: number): void {
    const circuit = this.circuits.get(upstream);
    if (circuit?.probe === probe) circuit.probe = undefined;
  }

  success(upstream: string): void {
    const circuit = this.circuits.get(upstream);
    this.circuits.delete(upstream);
    if (circuit && circuit.failures >= this.options.failureThreshold) {
      this.options.onTransition?.({
        kind: 'closed',
        upstream,
        openForMs: this.now() - (circuit.firstOpenedAt ?? circuit.openedAt),
      });
    }
  }

  failure(upstream: string): void {
    const circuit = this.circuits.get(upstream) ?? { failures: 0, openedAt: 0, probe: undefined, probeUntil: 0 };
    circuit.failures += 1;
    if (circuit.failures >= this.options.failureThreshold) {
      circuit.openedAt = this.now(); // (re)opens: a failed probe starts a new cooldown
      circuit.probe = undefined;
    }
    this.circuits.set(upstream, circuit);
    if (circuit.failures === this.options.failureThreshold) {
      circuit.firstOpenedAt = circuit.openedAt;
      this.options.onTransition?.({
        kind: 'opened',
        upstream,
        failures: circuit.failures,
        cooldownMs: this.options.cooldownMs,
      });
    }
  }

  /** Drops an upstream's circuit (a config reload removed it, or pointed it at another endpoint). */
  forget(upstream: string): void {
    this.circuits.delete(upstream);
  }

  /** Every upstream whose circuit is not closed, for health. */
  snapshot(): Record<string, CircuitState> {
    const out: Record<string, CircuitState> = {};
    for (const name of this.circuits.keys()) {
      const state = this.state(name);
      if (state !== 'closed') out[name] = state;
    }
    return out;
  }
}

class Permit implements CircuitPermit {
  private settled = false;

  constructor(
    private readonly breakers: CircuitBreakers,
    private readonly upstream: string,
    /** The probe's number, for a half-open probe. */
    private readonly probeNumber: number | undefined,
  ) {}

  get probe(): boolean {
    return this.probeNumber !== undefined;
  }

  success(): void {
    if (this.settle()) this.breakers.success(this.upstream);
  }

  failure(): void {
    if (this.settle()) this.breakers.failure(this.upstream);
  }

  release(): void {
    if (this.settle() && this.probeNumber !== undefined) this.breakers.releaseProbe(this.upstream, this.probeNumber);
  }

  answered(): void {
    // Closing the circuit ends the probe (its circuit is gone); the stream's own end still reports later.
    if (!this.settled && this.probeNumber !== undefined) this.breakers.success(this.upstream);
  }

  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    return true;
  }
}
