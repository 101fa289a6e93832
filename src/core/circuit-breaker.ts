export type CircuitState = 'closed' | 'open' | 'half_open';

interface Circuit {
  failures: number;
  openedAt: number;
  /** A half-open probe is running: other calls still skip the target until it reports. */
  probing: boolean;
  /** When it first opened (a failed probe re-opens without a new transition). */
  firstOpenedAt?: number;
}

/**
 * One circuit per upstream: after `failureThreshold` consecutive failures it opens and the upstream is skipped;
 * after `cooldownMs` one call is let through (half-open); its success closes the circuit, its failure opens it
 * again for another cooldown. Per instance, in memory: each gateway learns an upstream's health from its own calls.
 */
/** A circuit that opened (the upstream became unhealthy) or closed again after being open (it recovered). */
export type CircuitTransition =
  | { kind: 'opened'; upstream: string; failures: number; cooldownMs: number }
  | { kind: 'closed'; upstream: string; openForMs: number };

export class CircuitBreakers {
  private readonly circuits = new Map<string, Circuit>();

  constructor(
    private readonly options: { failureThreshold: number; cooldownMs: number; onTransition?: (transition: CircuitTransition) => void },
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

  /** Whether a call may go to `upstream` now; in half-open state only the first asker gets true (the probe). */
  tryAcquire(upstream: string): boolean {
    const state = this.state(upstream);
    if (state === 'closed') return true;
    if (state === 'open') return false;
    const circuit = this.circuits.get(upstream);
    if (!circuit || circuit.probing) return false;
    circuit.probing = true;
    return true;
  }

  /** The call ended without telling anything about the upstream's health (the caller's own mistake). */
  release(upstream: string): void {
    const circuit = this.circuits.get(upstream);
    if (circuit) circuit.probing = false;
  }

  success(upstream: string): void {
    const circuit = this.circuits.get(upstream);
    this.circuits.delete(upstream);
    if (circuit && circuit.failures >= this.options.failureThreshold) {
      this.options.onTransition?.({ kind: 'closed', upstream, openForMs: this.now() - (circuit.firstOpenedAt ?? circuit.openedAt) });
    }
  }

  failure(upstream: string): void {
    const circuit = this.circuits.get(upstream) ?? { failures: 0, openedAt: 0, probing: false };
    circuit.failures += 1;
    if (circuit.failures >= this.options.failureThreshold) {
      circuit.openedAt = this.now(); // (re)opens: a failed probe starts a new cooldown
      circuit.probing = false;
    }
    this.circuits.set(upstream, circuit);
    if (circuit.failures === this.options.failureThreshold) {
      circuit.firstOpenedAt = circuit.openedAt;
      this.options.onTransition?.({ kind: 'opened', upstream, failures: circuit.failures, cooldownMs: this.options.cooldownMs });
    }
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
