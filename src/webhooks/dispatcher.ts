import type { WebhookSubscription, WebhooksConfig } from '../config/types.js';
import type { OutboxDelivery, OutboxStore } from '../store/store-contract.js';
import type { AttemptResult, WebhookSender } from './deliver.js';

/**
 * A claim outlives one attempt's budget by this much before another instance may take the delivery (an attempt
 * that somehow outlived its lease is delivered twice at worst: receivers de-duplicate on the event id).
 */
const LEASE_MARGIN_MS = 5_000;

export interface DispatcherLog {
  warn(fields: Record<string, unknown>, msg: string): void;
  info(fields: Record<string, unknown>, msg: string): void;
}

/**
 * Delivers what the outbox holds. Each instance runs one: it claims due deliveries per subscription, at most
 * `max_concurrency` in flight per receiver, and records each outcome — 2xx delivered; anything else tried again
 * after an exponential backoff with jitter (never sooner than the receiver's Retry-After), until the attempts or
 * the event's age run out, then dead-lettered. It never runs on the request path: a slow or dead receiver only
 * occupies this loop's own slots.
 */
export class WebhookDispatcher {
  private readonly inFlight = new Map<string, number>();
  private readonly running = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private soonTimer: NodeJS.Timeout | undefined;
  private ticking = false;
  private again = false;
  private stopped = false;
  private started = false;

  constructor(
    private readonly options: {
      store: OutboxStore;
      config: WebhooksConfig;
      sender: WebhookSender;
      log: DispatcherLog;
      random?: () => number;
      now?: () => number;
    },
  ) {}

  /**
   * A config reload: deliveries claimed from now on follow the new subscriptions and retry settings (one already
   * being sent finishes under the old); polling starts when the first subscription appears.
   */
  reconfigure(config: WebhooksConfig): void {
    this.options.config = config;
    if (this.started && !this.stopped) this.start();
  }

  start(): void {
    this.started = true;
    if (this.options.config.subscriptions.length === 0 || this.timer) return;
    this.timer = setInterval(() => this.nudge(), this.options.config.pollIntervalMs);
    this.timer.unref();
    this.nudge();
  }

  /**
   * Look for due deliveries soon (called after a local event was written): within 10 ms, so that the events of a
   * busy moment are claimed together (one store step for a batch) and delivery work yields to the chat traffic.
   */
  soon(): void {
    if (this.stopped || this.soonTimer) return;
    this.soonTimer = setTimeout(() => {
      this.soonTimer = undefined;
      this.nudge();
    }, 10);
  }

  /** Look for due deliveries now. */
  nudge(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    void this.tick().finally(() => {
      this.ticking = false;
      if (this.again) {
        this.again = false;
        setImmediate(() => this.nudge());
      }
    });
  }

  /**
   * Stops claiming; gives attempts in flight `graceMs` to finish, then cuts them (a cut attempt stays claimed and
   * is taken again when its lease ends: delivered at least once, never lost). A dead receiver cannot hold up a
   * shutdown.
   */
  async close(graceMs = 1_000): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.soonTimer) clearTimeout(this.soonTimer);
    const pending = Promise.allSettled([...this.running]);
    await Promise.race([pending, new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
    await this.options.sender.destroy();
    await Promise.race([pending, new Promise((resolve) => setTimeout(resolve, 200).unref())]);
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private async tick(): Promise<void> {
    const { config, store } = this.options;
    for (const subscription of config.subscriptions) {
      const free = subscription.maxConcurrency - (this.inFlight.get(subscription.id) ?? 0);
      if (free <= 0 || this.stopped) continue;
      let claimed: OutboxDelivery[];
      try {
        claimed = await store.claim(subscription.id, free, config.timeoutMs + LEASE_MARGIN_MS, this.now());
      } catch (error) {
        this.options.log.warn(
          { err: error, subscription: subscription.id },
          'webhook outbox unavailable; deliveries wait',
        );
        continue;
      }
      for (const delivery of claimed) this.launch(subscription, delivery);
      // A full batch means more may be due: look again as soon as a slot frees (see launch).
    }
  }

  private launch(subscription: WebhookSubscription, delivery: OutboxDelivery): void {
    this.inFlight.set(subscription.id, (this.inFlight.get(subscription.id) ?? 0) + 1);
    const run = this.attempt(subscription, delivery)
      .catch((error: unknown) =>
        this.options.log.warn(
          { err: error, delivery: delivery.id },
          'webhook attempt could not be recorded; it will be claimed again',
        ),
      )
      .finally(() => {
        this.inFlight.set(subscription.id, (this.inFlight.get(subscription.id) ?? 1) - 1);
        this.running.delete(run);
        this.soon();
      });
    this.running.add(run);
  }

  private async attempt(subscription: WebhookSubscription, delivery: OutboxDelivery): Promise<void> {
    const { store, config, sender, log } = this.options;
    const event = eventKindOf(delivery.body);
    const result = await sender.send(
      subscription,
      { eventId: delivery.eventId, event, body: delivery.body },
      this.now(),
    );
    const attempts = delivery.attempts + 1;
    const fields = {
      delivery: delivery.id,
      event_id: delivery.eventId,
      event,
      subscription: subscription.id,
      attempt: attempts,
      status: result.status,
    };
    if (result.ok) {
      await store.delivered(delivery.id, this.now());
      log.info(fields, 'webhook delivered');
      return;
    }
    const now = this.now();
    const outOfAttempts = attempts >= config.maxAttempts;
    const tooOld = now - delivery.createdMs >= config.maxAgeMs;
    if (outOfAttempts || tooOld) {
      const why = `${result.error ?? 'failed'} (${outOfAttempts ? `after ${attempts} attempts` : `event older than ${Math.round(config.maxAgeMs / 1000)} s`})`;
      await store.deadLetter(delivery.id, attempts, why, now);
      log.warn({ ...fields, error: why }, 'webhook dead-lettered');
      return;
    }
    const delay = nextDelayMs(attempts, config, result, this.options.random ?? Math.random);
    await store.retryLater(delivery.id, attempts, now + delay, result.error ?? 'failed');
    log.warn({ ...fields, error: result.error, retry_in_ms: delay }, 'webhook attempt failed');
  }
}

/**
 * Exponential backoff with ±20 % jitter: base·2^(n−1), capped, times a uniform draw in [0.8, 1.2). The jitter
 * spreads receivers' retries apart; unlike "full jitter" it keeps each wait close to the nominal one, so a
 * receiver that is down gets steadily longer pauses. A receiver's Retry-After (429/503) is honoured, capped too.
 */
export function nextDelayMs(
  attempts: number,
  config: Pick<WebhooksConfig, 'baseDelayMs' | 'maxDelayMs'>,
  result: Pick<AttemptResult, 'retryAfterMs'>,
  random: () => number,
): number {
  const nominal = Math.min(config.maxDelayMs, config.baseDelayMs * 2 ** Math.max(0, attempts - 1));
  const jittered = Math.round(nominal * (0.8 + 0.4 * random()));
  return Math.min(config.maxDelayMs, Math.max(jittered, result.retryAfterMs ?? 0));
}

/** The `event` of an envelope's JSON text, without parsing it. */
export function eventKindOf(body: string): string {
  const match = /"event":"([a-z0-9._-]{1,64})"/.exec(body);
  return match?.[1] ?? 'unknown';
}
