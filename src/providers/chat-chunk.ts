import type { ChatCompletionChunk } from './provider-contract.js';

/** What one chunk's single choice carries. */
export type ChunkDelta = ChatCompletionChunk['choices'][number]['delta'];

/**
 * A `chat.completion.chunk` of one choice (index 0): how the Anthropic and Gemini stream translators write each
 * chunk, with their stream's id, creation time and model.
 */
export function chatChunk(
  id: string,
  created: number,
  model: string,
  delta: ChunkDelta,
  finishReason: string | null = null,
): ChatCompletionChunk {
  return {
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}
