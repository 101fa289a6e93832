import type { FastifyInstance } from 'fastify';
import type { GatewayConfig, WebhooksConfig } from '../config/types.js';
import type { OutboxStore } from '../store/store-contract.js';
import { WebhookSender } from '../webhooks/deliver.js';
import { WebhookDispatcher } from '../webhooks/dispatcher.js';
import { chatEventsObserver, type RouteEvents } from '../webhooks/gateway-events.js';
import { Webhooks } from '../webhooks/webhooks.js';

export interface WiredWebhooks {
  webhooks: Webhooks;
  /** Starts delivering (once the app is ready). */
  start(): void;
  /** A config reload: new subscriptions, rollout stages and retry settings. */
  reconfigure(config: WebhooksConfig): void;
}

/**
 * Signed event callbacks: events are written to the outbox (in the request's path only as a store write) and
 * delivered by the dispatcher, which closes with the app. Call outcomes become events once answered, under each
 * route's names (`routeEvents`: the surfaces' descriptors and embeddings).
 */
export function wireWebhooks(
  app: FastifyInstance,
  config: GatewayConfig,
  outbox: OutboxStore | undefined,
  routeEvents: ReadonlyMap<string, RouteEvents>,
): WiredWebhooks {
  if (config.webhooks.subscriptions.length > 0 && !outbox)
    throw new Error('webhook subscriptions are configured but buildApp was given no outbox store');
  const dispatcher = outbox
    ? new WebhookDispatcher({
        store: outbox,
        config: config.webhooks,
        sender: new WebhookSender({
          timeoutMs: config.webhooks.timeoutMs,
          allowPrivateAddresses: config.webhooks.allowPrivateAddresses,
          userAgent: `llm-gateway-webhooks/${config.version}`,
        }),
        log: app.log,
      })
    : undefined;
  const webhooks = new Webhooks({
    config: config.webhooks,
    environment: config.environment,
    store: outbox,
    log: app.log,
    onWritten: () => dispatcher?.soon(),
  });
  app.addHook('onClose', async () => {
    await dispatcher?.close();
  });
  const chatEvents = chatEventsObserver(webhooks, routeEvents);
  if (chatEvents) app.requestObservers.push(chatEvents);
  return {
    webhooks,
    start: () => dispatcher?.start(),
    reconfigure: (next) => {
      webhooks.reconfigure(next);
      dispatcher?.reconfigure(next);
    },
  };
}
