import type { WebhookSubscription, WebhooksConfig } from '../config/types.js';
import type { OutboxStore } from '../store/store-contract.js';
import { newEventId } from './event-id.js';

export interface WebhookLog {
  warn(fields: Record<string, unknown>, msg: string): void;
}

/**
 * Emitting events. An event goes to the subscriptions that list its kind (or `*`), filtered by the kind's rollout
 * stage (`off`: nobody; `canary`: subscriptions marked canary; `all`: everyone), and is written to the outbox as
 * one delivery per subscription with the same event id. Writing never blocks or fails the caller: a store
 * failure is logged. The dispatcher is nudged so a local event goes out without waiting for the next poll.
 */
export class Webhooks {
  private readonly byKind = new Map<string, WebhookSubscription[]>();

  constructor(
    private readonly options: {
      config: WebhooksConfig;
      environment: string;
      store: OutboxStore | undefined;
      log: WebhookLog;
      /** Called after events were written (the local dispatcher's nudge). */
      onWritten?: () => void;
    },
  ) {}

  /** A config reload: new subscriptions and rollout stages for the events emitted from now on. */
  reconfigure(config: WebhooksConfig): void {
    this.options.config = config;
    this.byKind.clear();
  }

  /** The subscriptions that receive `kind` now; cached per kind until a config reload. */
  recipients(kind: string): WebhookSubscription[] {
    let list = this.byKind.get(kind);
    if (!list) {
      const stage = this.options.config.rollout[kind] ?? 'off';
      list = this.options.config.subscriptions.filter(
        (s) => stage !== 'off' && (stage === 'all' || s.canary) && (s.events.includes(kind) || s.events.includes('*')),
      );
      this.byKind.set(kind, list);
    }
    return list;
  }

  /** Whether anyone receives `kind`: lets the hot path skip building an event nobody gets. */
  wants(kind: string): boolean {
    return this.recipients(kind).length > 0;
  }

  /** Whether some recipient of `kind` opted in to prompt and answer text. */
  wantsContent(kind: string): boolean {
    return this.recipients(kind).some((s) => s.includeContent);
  }

  /**
   * Writes an event for its recipients; resolves with its id (undefined when nobody receives it). `content` is
   * added to `data.content` only for subscriptions that opted in. Never rejects.
   */
  async emit(
    kind: string,
    data: Record<string, unknown>,
    content?: Record<string, unknown>,
  ): Promise<string | undefined> {
    const recipients = this.recipients(kind);
    const store = this.options.store;
    if (recipients.length === 0 || !store) return undefined;
    const id = newEventId();
    const created = new Date();
    const envelope = (withContent: boolean) =>
      JSON.stringify({
        id,
        event: kind,
        created_at: created.toISOString(),
        environment: this.options.environment,
        data: withContent && content ? { ...data, content } : data,
      });
    const plain = envelope(false);
    const deliveries = recipients.map((s) => ({
      id: `${id}:${s.id}`,
      eventId: id,
      subscription: s.id,
      body: s.includeContent && content ? envelope(true) : plain,
    }));
    try {
      await store.enqueue(deliveries, created.getTime());
      this.options.onWritten?.();
      return id;
    } catch (error) {
      this.options.log.warn(
        { err: error, event: kind, event_id: id },
        'webhook event could not be written to the outbox',
      );
      return undefined;
    }
  }
}
