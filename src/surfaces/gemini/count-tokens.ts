import { GatewayError } from '../../errors/gateway-error.js';
import type { ChatRequestBody } from '../../providers/provider-contract.js';
import type { GeminiCountTokensRequest, GeminiCountTokensResponse } from '../../wire/gemini.js';
import { geminiToChat } from './request-to-chat.js';

/**
 * A `:countTokens` request as the chat request whose prompt the gateway counts (for a model not served by Gemini;
 * Gemini counts its own): `contents`, or the whole `generateContentRequest` (system instruction and tools counted
 * too), translated as a generate call would be. Fields a translated call would drop are only left out (no notes:
 * counting sends nothing). Giving both is Gemini's 400, and the gateway's.
 */
export function countTokensToChat(body: GeminiCountTokensRequest, model: string): ChatRequestBody {
  if (body.contents !== undefined && body.generateContentRequest !== undefined) {
    throw new GatewayError('validation_failed', {
      errors: [{ field: 'generateContentRequest', problem: 'give contents or generateContentRequest, not both' }],
    });
  }
  const request = body.generateContentRequest ?? { contents: body.contents ?? [] };
  return geminiToChat(request, model);
}

/** The answer of `:countTokens`. */
export function countTokensAnswer(totalTokens: number): GeminiCountTokensResponse {
  return { totalTokens };
}
