// The mock's OpenAI chat completions API: declared tools, `tool` messages, and the answer as a chat.completion or
// as chunks (role, content or tool_calls deltas, finish_reason, a usage chunk when asked, `[DONE]`).
import type { ServerResponse } from 'node:http';
import { asArray, asRecord, isJsonFormat, stringParamsOf, textOf, type ParsedTurn, type Reply } from './task.js';
import { imageOfUrl, joinTexts, type Conversation, type ImageSeen } from './conversation.js';
import { freshId, twoPieces, USAGE, writeJson, writeSse, type SseEvent } from './wire.js';

/** A chat message's text parts joined, and its images (`image_url` parts). */
function contentOf(content: unknown): { text: string; images: ImageSeen[] } {
  if (typeof content === 'string') return { text: content, images: [] };
  const parts = asArray(content).map(asRecord);
  const images = parts
    .map((part) => asRecord(part.image_url).url)
    .filter((url): url is string => typeof url === 'string')
    .map(imageOfUrl);
  const texts = parts.filter((part) => typeof part.text === 'string').map((part) => part.text as string);
  return { text: joinTexts(texts), images };
}

function conversationOf(messages: Array<Record<string, unknown>>): Conversation {
  const system: string[] = [];
  const userTexts: string[] = [];
  const images: ImageSeen[] = [];
  for (const message of messages) {
    const { text, images: seen } = contentOf(message.content);
    if (message.role === 'system' || message.role === 'developer') system.push(text);
    else if (message.role === 'user') {
      if (text !== '') userTexts.push(text);
      images.push(...seen);
    }
  }
  return { system: joinTexts(system), userTexts, images };
}

export function parseChat(body: Record<string, unknown>): ParsedTurn & { includeUsage: boolean } {
  const tools = asArray(body.tools)
    .map((tool) => asRecord(asRecord(tool).function))
    .filter((fn) => typeof fn.name === 'string')
    .map((fn) => ({ name: fn.name as string, stringParams: stringParamsOf(fn.parameters) }));
  const toolResults = asArray(body.messages)
    .map(asRecord)
    .filter((message) => message.role === 'tool')
    .map((message) => textOf(message.content));
  return {
    model: typeof body.model === 'string' ? body.model : 'mock-model',
    stream: body.stream === true,
    tools,
    toolResults,
    includeUsage: asRecord(body.stream_options).include_usage === true,
    jsonAsked: isJsonFormat(asRecord(body.response_format).type),
    conversation: conversationOf(asArray(body.messages).map(asRecord)),
  };
}

const usage = { prompt_tokens: USAGE.input, completion_tokens: USAGE.output, total_tokens: USAGE.input + USAGE.output };

export function answerChat(res: ServerResponse, turn: ParsedTurn & { includeUsage: boolean }, reply: Reply): void {
  const id = freshId('chatcmpl-');
  const created = Math.floor(Date.now() / 1000);
  const call =
    reply.kind === 'tool'
      ? {
          id: reply.callId ?? freshId('call_'),
          type: 'function',
          function: { name: reply.tool.name, arguments: JSON.stringify(reply.args) },
        }
      : undefined;
  const finish = call ? 'tool_calls' : 'stop';
  if (!turn.stream) {
    const message = call
      ? { role: 'assistant', content: null, tool_calls: [call] }
      : { role: 'assistant', content: reply.kind === 'text' ? reply.text : '' };
    writeJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model: turn.model,
      choices: [{ index: 0, message, finish_reason: finish }],
      usage,
    });
    return;
  }
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): SseEvent => [
    undefined,
    {
      id,
      object: 'chat.completion.chunk',
      created,
      model: turn.model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    },
  ];
  const events: SseEvent[] = [chunk({ role: 'assistant', content: '' })];
  if (call) {
    const [first, second] = twoPieces(call.function.arguments);
    events.push(
      chunk({
        tool_calls: [
          { index: 0, id: call.id, type: 'function', function: { name: call.function.name, arguments: first } },
        ],
      }),
    );
    events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: second } }] }));
  } else if (reply.kind === 'text') {
    events.push(chunk({ content: reply.text }));
  }
  events.push(chunk({}, finish));
  if (turn.includeUsage)
    events.push([undefined, { id, object: 'chat.completion.chunk', created, model: turn.model, choices: [], usage }]);
  writeSse(res, events, true);
}
