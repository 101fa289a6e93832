import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from '../config/types.js';
import { makeStoredResponseHandlers, type StoredResponseHandlers } from '../routes/stored-responses.js';
import type { ResponseStore } from '../store/store-contract.js';
import { ResponseHistory } from '../surfaces/responses/response-history.js';

/**
 * The Responses API's stored responses, which its surface (surfaces/responses/descriptor.ts) continues and the
 * stored-response paths serve (in the state store, unless `responses.store` is false or no store was given).
 */
export function wireResponses(
  app: FastifyInstance,
  config: GatewayConfig,
  store: ResponseStore | undefined,
): { history: ResponseHistory | undefined; stored: StoredResponseHandlers } {
  const { store: keep, ...bounds } = config.responses;
  const history =
    store && keep
      ? new ResponseHistory({ store, bounds: { ...bounds, bodyLimitBytes: config.bodyLimitBytes }, log: app.log })
      : undefined;
  return { history, stored: makeStoredResponseHandlers(history) };
}
