// The mock's Anthropic Messages API: what a request declares and carries back, and the answer (JSON or events)
// in the order and shape Anthropic's API sends them.
import type { ServerResponse } from 'node:http';
import { asArray, asRecord, stringParamsOf, textOf, type ParsedTurn, type Reply } from './task.js';
import { base64Bytes, imageOfUrl, joinTexts, type Conversation, type ImageSeen } from './conversation.js';
import { freshId, twoPieces, USAGE, writeJson, writeSse, type SseEvent } from './wire.js';

/** An image block's media type and size (base64 source) or address (url source). */
function imageOfBlock(block: Record<string, unknown>): ImageSeen {
  const source = asRecord(block.source);
  if (source.type === 'url' && typeof source.url === 'string') return imageOfUrl(source.url);
  return {
    mediaType: typeof source.media_type === 'string' ? source.media_type : 'unknown',
    bytes: typeof source.data === 'string' ? base64Bytes(source.data) : 0,
  };
}

/** `system` (a string or text blocks), a `system` message in the list (a beta), the user's text and images. */
function conversationOf(body: Record<string, unknown>): Conversation {
  const blocksOf = (content: unknown): Array<Record<string, unknown>> =>
    typeof content === 'string' ? [{ type: 'text', text: content }] : asArray(content).map(asRecord);
  const textsOf = (content: unknown): string =>
    joinTexts(
      blocksOf(content)
        .filter((block) => block.type === 'text' && typeof block.text === 'string')
        .map((block) => block.text as string),
    );
  const system = [textsOf(body.system)];
  const userTexts: string[] = [];
  const images: ImageSeen[] = [];
  for (const message of asArray(body.messages).map(asRecord)) {
    if (message.role === 'system') system.push(textsOf(message.content));
    if (message.role !== 'user') continue;
    const text = textsOf(message.content);
    if (text !== '') userTexts.push(text);
    images.push(
      ...blocksOf(message.content)
        .filter((block) => block.type === 'image')
        .map(imageOfBlock),
    );
  }
  return { system: joinTexts(system), userTexts, images };
}

export function parseMessages(body: Record<string, unknown>): ParsedTurn & { thinking: boolean } {
  const tools = asArray(body.tools)
    .map(asRecord)
    .filter((tool) => typeof tool.name === 'string')
    .map((tool) => ({ name: tool.name as string, stringParams: stringParamsOf(tool.input_schema) }));
  const toolResults: string[] = [];
  for (const message of asArray(body.messages).map(asRecord)) {
    for (const block of asArray(message.content).map(asRecord)) {
      if (block.type === 'tool_result') toolResults.push(textOf(block.content));
    }
  }
  const thinkingType = asRecord(body.thinking).type;
  return {
    model: typeof body.model === 'string' ? body.model : 'mock-model',
    stream: body.stream === true,
    tools,
    toolResults,
    thinking: thinkingType === 'enabled' || thinkingType === 'adaptive',
    jsonAsked: asRecord(asRecord(body.output_config).format).type === 'json_schema',
    conversation: conversationOf(body),
  };
}

/** Content blocks of the answer: a signed thinking block when thinking is on (as Anthropic sends it), then the reply. */
function blocksOf(reply: Reply, thinking: boolean): Array<Record<string, unknown>> {
  const blocks: Array<Record<string, unknown>> = [];
  if (thinking)
    blocks.push({ type: 'thinking', thinking: 'Reading the file.', signature: 'c2lnbmF0dXJlLWNvbmZvcm1hbmNl' });
  if (reply.kind === 'text') blocks.push({ type: 'text', text: reply.text });
  else
    blocks.push({ type: 'tool_use', id: reply.callId ?? freshId('toolu_'), name: reply.tool.name, input: reply.args });
  return blocks;
}

function eventsOfBlock(block: Record<string, unknown>, index: number): SseEvent[] {
  const delta = (value: Record<string, unknown>): SseEvent => [
    'content_block_delta',
    { type: 'content_block_delta', index, delta: value },
  ];
  const events: SseEvent[] = [];
  if (block.type === 'thinking') {
    events.push([
      'content_block_start',
      { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } },
    ]);
    events.push(delta({ type: 'thinking_delta', thinking: block.thinking }));
    events.push(delta({ type: 'signature_delta', signature: block.signature }));
  } else if (block.type === 'text') {
    events.push([
      'content_block_start',
      { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
    ]);
    events.push(delta({ type: 'text_delta', text: block.text }));
  } else {
    events.push([
      'content_block_start',
      { type: 'content_block_start', index, content_block: { ...block, input: {} } },
    ]);
    for (const piece of twoPieces(JSON.stringify(block.input)))
      events.push(delta({ type: 'input_json_delta', partial_json: piece }));
  }
  events.push(['content_block_stop', { type: 'content_block_stop', index }]);
  return events;
}

export function answerMessages(res: ServerResponse, turn: ParsedTurn & { thinking: boolean }, reply: Reply): void {
  const blocks = blocksOf(reply, turn.thinking);
  const stopReason = reply.kind === 'tool' ? 'tool_use' : 'end_turn';
  const message = { id: freshId('msg_'), type: 'message', role: 'assistant', model: turn.model, stop_sequence: null };
  if (!turn.stream) {
    writeJson(res, 200, {
      ...message,
      content: blocks,
      stop_reason: stopReason,
      usage: { input_tokens: USAGE.input, output_tokens: USAGE.output },
    });
    return;
  }
  const events: SseEvent[] = [
    [
      'message_start',
      {
        type: 'message_start',
        message: { ...message, content: [], stop_reason: null, usage: { input_tokens: USAGE.input, output_tokens: 1 } },
      },
    ],
  ];
  blocks.forEach((block, index) => events.push(...eventsOfBlock(block, index)));
  events.push([
    'message_delta',
    {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: USAGE.output },
    },
  ]);
  events.push(['message_stop', { type: 'message_stop' }]);
  writeSse(res, events);
}
