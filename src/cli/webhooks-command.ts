import type { GatewayConfig } from '../config/types.js';
import type { OutboxStore } from '../store/store-contract.js';
import { WebhookSender } from '../webhooks/deliver.js';
import { eventKindOf } from '../webhooks/dispatcher.js';
import { newEventId } from '../webhooks/event-id.js';

export interface CliOutput {
  out(line: string): void;
  err(line: string): void;
}

/** The kind of the event `gateway webhooks test` sends; it bypasses rollout and the subscription's event list. */
export const TEST_EVENT = 'webhook.test';

/**
 * `gateway webhooks test <subscription>`: sends one signed `webhook.test` event straight to the receiver (not
 * through the outbox) and shows its answer. Exit code 0 on a 2xx.
 */
export async function sendTestEvent(config: GatewayConfig, subscriptionId: string, io: CliOutput): Promise<number> {
  const subscription = config.webhooks.subscriptions.find((s) => s.id === subscriptionId);
  if (!subscription) {
    io.err(
      `no subscription "${subscriptionId}" in environment ${config.environment}; known: ${config.webhooks.subscriptions.map((s) => s.id).join(', ') || '(none)'}`,
    );
    return 2;
  }
  const id = newEventId();
  const body = JSON.stringify({
    id,
    event: TEST_EVENT,
    created_at: new Date().toISOString(),
    environment: config.environment,
    data: { subscription: subscription.id, message: 'A test event sent by `gateway webhooks test`.' },
  });
  const sender = new WebhookSender({
    timeoutMs: config.webhooks.timeoutMs,
    allowPrivateAddresses: config.webhooks.allowPrivateAddresses,
    userAgent: `llm-gateway-webhooks/${config.version}`,
  });
  try {
    io.out(
      `POST ${subscription.url}  (event ${TEST_EVENT}, id ${id}, ${subscription.secrets.length} signature${subscription.secrets.length === 1 ? '' : 's'})`,
    );
    const result = await sender.send(subscription, { eventId: id, event: TEST_EVENT, body });
    if (result.status !== undefined) io.out(`answer: HTTP ${result.status}`);
    if (result.answer) io.out(`body: ${result.answer}`);
    if (!result.ok) io.err(`not delivered: ${result.error ?? 'failed'}`);
    return result.ok ? 0 : 1;
  } finally {
    await sender.close();
  }
}

/** `gateway webhooks dead [--limit N] [--json]`: the dead letters, oldest first. */
export async function listDeadLetters(
  outbox: OutboxStore,
  limit: number,
  json: boolean,
  io: CliOutput,
): Promise<number> {
  const dead = await outbox.listDead(limit);
  if (json) {
    io.out(
      JSON.stringify(
        dead.map(({ body: _body, ...rest }) => ({ ...rest, created_at: new Date(rest.createdMs).toISOString() })),
      ),
    );
    return 0;
  }
  if (dead.length === 0) {
    io.out('no dead letters');
    return 0;
  }
  for (const d of dead) {
    const event = eventKindOf(d.body);
    io.out(
      `${d.id}  ${event}  subscription=${d.subscription}  attempts=${d.attempts}  created=${new Date(d.createdMs).toISOString()}  last_error=${d.lastError ?? ''}`,
    );
  }
  return 0;
}

/**
 * `gateway webhooks redeliver <delivery id>... | --all`: puts dead letters back in the queue, due now, with a
 * fresh attempt budget; a running gateway sends them on its next poll (same event id, signed afresh).
 */
export async function redeliver(outbox: OutboxStore, ids: string[], all: boolean, io: CliOutput): Promise<number> {
  const targets = all ? (await outbox.listDead(100_000)).map((d) => d.id) : ids;
  if (targets.length === 0) {
    io.err(all ? 'no dead letters to redeliver' : 'give delivery ids (see `gateway webhooks dead`) or --all');
    return all ? 0 : 2;
  }
  const count = await outbox.redeliver(targets);
  io.out(
    `${count} of ${targets.length} queued for redelivery${count < targets.length ? ' (the others were not dead letters)' : ''}`,
  );
  return 0;
}
