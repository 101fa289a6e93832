import cluster from 'node:cluster';
import { deserialize, serialize } from 'node:v8';
import type { GatewayConfig } from '../config/types.js';

/**
 * A cluster worker takes its configuration from the primary instead of reading and validating it again: it never
 * loads zod or the config sections (a large part of each worker's idle footprint), and every worker, a respawned one
 * included, runs with the very config the primary validated at start (editing the file later changes nothing
 * until a restart, as for a single process).
 *
 * The worker asks once its listener is in place (a message sent before a child listens can be lost) and the
 * primary answers with the config as a V8 structured clone (Maps kept) in base64, over the JSON channel that
 * node:cluster and the metrics scrapes use.
 */
const ASK = 'llmgw:config-ask';
const CONFIG = 'llmgw:config';
/** A primary answers at once; past this the worker fails to start (the primary then replaces it, with backoff). */
const ANSWER_TIMEOUT_MS = 30_000;

interface Message {
  type?: unknown;
  config?: unknown;
}

const isMessage = (value: unknown): value is Message => typeof value === 'object' && value !== null;

/** Primary side: answers every worker that asks with `config`. */
export function handConfigToWorkers(config: GatewayConfig): void {
  const encoded = serialize(config).toString('base64');
  cluster.on('message', (worker, message: unknown) => {
    if (isMessage(message) && message.type === ASK && worker.isConnected())
      worker.send({ type: CONFIG, config: encoded });
  });
}

/** Worker side: the primary's config. */
export function configFromPrimary(): Promise<GatewayConfig> {
  return new Promise<GatewayConfig>((resolve, reject) => {
    const onMessage = (message: unknown) => {
      if (!isMessage(message) || message.type !== CONFIG || typeof message.config !== 'string') return;
      settle();
      resolve(deserialize(Buffer.from(message.config, 'base64')) as GatewayConfig);
    };
    const timer = setTimeout(() => {
      settle();
      reject(new Error('the cluster primary did not send the configuration'));
    }, ANSWER_TIMEOUT_MS);
    const settle = () => {
      clearTimeout(timer);
      process.off('message', onMessage);
    };
    if (!process.send) {
      settle();
      reject(new Error('a cluster worker without an IPC channel'));
      return;
    }
    process.on('message', onMessage);
    process.send({ type: ASK });
  });
}
