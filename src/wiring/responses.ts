import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from '../config/types.js';
import type { ChatService } from '../core/chat-service.js';
import { makeStoredResponseHandlers, type StoredResponseHandlers } from '../routes/stored-responses.js';
import type { ResponseStore } from '../store/contract.js';
import { ResponseHistory } from '../surfaces/responses/response-history.js';
import { responsesSurface } from '../surfaces/responses/responses-surface.js';
import type { ApiSurface } from '../surfaces/surface.js';
import type { NativeOwnership } from '../surfaces/native-ownership.js';

/**
 * The Responses API's own parts: its surface of the chat pipeline and the stored responses it continues and
 * serves (in the state store, unless `responses.store` is false or no store was given).
 */
export function wireResponses(
  app: FastifyInstance,
  config: GatewayConfig,
  store: ResponseStore | undefined,
  chat: ChatService,
  ownership: NativeOwnership,
): { surface: ApiSurface; stored: StoredResponseHandlers } {
  const { store: keep, ...bounds } = config.responses;
  const history = store && keep ? new ResponseHistory({ store, bounds: { ...bounds, bodyLimitBytes: config.bodyLimitBytes }, log: app.log }) : undefined;
  // Asked before the model is routed: a model that cannot be routed fails there, with its own error, not here.
  const routed = <T>(ask: () => T, otherwise: T): T => {
    try {
      return ask();
    } catch {
      return otherwise;
    }
  };
  const surface = responsesSurface(
    history,
    (model) => routed(() => chat.forwardsNatively('responses', model), false),
    ownership,
    (model, field) => routed(() => chat.carries(model, field), true),
  );
  return { surface, stored: makeStoredResponseHandlers(history) };
}
