import { setTimeout as sleep } from 'node:timers/promises';
import type {
  CallContext,
  ChatCompletionResult,
  ChatMessage,
  ChatRequestBody,
  Provider,
  StreamBatch,
  StreamChunk,
  UpstreamModel,
} from '../provider-contract.js';

export const ECHO_MODEL_ID = 'echo';
export const ECHO_PROVIDER_NAME = 'dev-echo';
export const ECHO_DESCRIPTION =
  'Built-in development model: answers with your last message. Served only when GATEWAY_ENV=dev, never in staging or prod.';

/**
 * The dev-only echo model, so a new user sees the whole path (auth, validation, JSON and SSE answers) work with
 * no provider account and no network. It never calls anything. Streams are split per word with a small pause so
 * the stream is visible in a terminal.
 */
export class EchoProvider implements Provider {
  readonly name = ECHO_PROVIDER_NAME;
  readonly kind = 'echo';
  readonly probeable = false;
  private readonly chunkDelayMs: number;

  constructor(options: { chunkDelayMs?: number } = {}) {
    this.chunkDelayMs = options.chunkDelayMs ?? 20;
  }

  chat(body: ChatRequestBody, _context: CallContext): Promise<ChatCompletionResult> {
    const content = echoText(body.messages);
    const usage = countUsage(body.messages, content);
    const completion = {
      id: `chatcmpl-echo-${Date.now().toString(36)}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: ECHO_MODEL_ID,
      choices: [{ index: 0, message: { role: 'assistant', content }, logprobs: null, finish_reason: 'stop' }],
      usage,
    };
    return Promise.resolve({ body: Buffer.from(JSON.stringify(completion)), usage });
  }

  async *streamChat(body: ChatRequestBody, context: CallContext): AsyncGenerator<StreamBatch> {
    const content = echoText(body.messages);
    const base = {
      id: `chatcmpl-echo-${Date.now().toString(36)}`,
      created: Math.floor(Date.now() / 1000),
      model: ECHO_MODEL_ID,
    };
    const chunk = (delta: Record<string, string>, finish: string | null): StreamChunk => ({
      chunk: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] },
    });
    yield [chunk({ role: 'assistant', content: '' }, null)];
    for (const piece of content.match(/\S+\s*/g) ?? []) {
      if (this.chunkDelayMs > 0) await sleep(this.chunkDelayMs, undefined, { signal: context.signal });
      yield [chunk({ content: piece }, null)];
    }
    yield [chunk({}, 'stop')];
  }

  listModels(_signal: AbortSignal): Promise<UpstreamModel[]> {
    return Promise.resolve([{ id: ECHO_MODEL_ID, createdAt: undefined, ownedBy: ECHO_PROVIDER_NAME }]);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

function echoText(messages: ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === 'user') return `Echo: ${textOf(message.content)}`;
  }
  return 'Echo: (no user message)';
}

function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
  }
  return '';
}

/** A rough count (about four characters a token), labelled as an estimate by being the echo model's. */
function countUsage(messages: ChatMessage[], answer: string) {
  const prompt = Math.ceil(messages.reduce((n, m) => n + textOf(m.content).length, 0) / 4);
  const completion = Math.ceil(answer.length / 4);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
