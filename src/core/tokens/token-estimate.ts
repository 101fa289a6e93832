import type { ChatMessage } from '../../providers/provider-contract.js';

/**
 * The one token estimate for text no tokenizer is loaded for: about four characters a token, plus 4 per message.
 * Rate-limit admission uses it for every call (corrected by the provider's usage when the call ends), and the
 * context-window check for models whose tokenizer is not public.
 */
export function estimatePromptTokens(messages: readonly ChatMessage[], tools: unknown): number {
  const chars = messages.reduce((n, m) => n + messageText(m).length, 0) + toolsText(tools).length;
  return Math.ceil(chars / 4) + 4 * messages.length;
}

/** What of a message is counted: its text (content parts as their JSON) and its tool calls' names and arguments. */
export function messageText(message: ChatMessage): string {
  let text =
    typeof message.content === 'string'
      ? message.content
      : Array.isArray(message.content)
        ? JSON.stringify(message.content)
        : '';
  for (const call of message.tool_calls ?? []) text += call.function.name + call.function.arguments;
  return text;
}

/** The tool definitions as the model reads them (their JSON), or '' when there are none. */
export function toolsText(tools: unknown): string {
  return Array.isArray(tools) && tools.length > 0 ? JSON.stringify(tools) : '';
}

/** The tokens of an embeddings input: texts by the same estimate (four characters a token), token arrays exactly. */
export function estimateInputTokens(
  input: string | readonly string[] | readonly number[] | readonly (readonly number[])[],
): number {
  if (typeof input === 'string') return Math.ceil(input.length / 4);
  let tokens = 0;
  for (const item of input)
    tokens += typeof item === 'string' ? Math.ceil(item.length / 4) : Array.isArray(item) ? item.length : 1;
  return tokens;
}
