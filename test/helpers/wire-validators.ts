/**
 * One validator per API a caller speaks — chat completions, the Responses API, Anthropic's Messages API — for a
 * whole answer as the caller received it (JSON, or the complete event stream): everything a client's parser relies
 * on (event order, indexes, ids that agree, deltas that add up to what the closing event says, a stop reason, the
 * end marker) is checked, and the turn it holds is returned: its text, its tool calls, how it stopped. A broken
 * answer throws an AssertionError that names the event and the rule.
 */
import assert from 'node:assert/strict';

export interface ToolCall {
  id: string;
  name: string;
  /** The arguments' JSON text (Messages: the input object, serialised; a Responses custom tool call: ''). */
  arguments: string;
  /** Responses only: the `namespace` tool the called function is in. */
  namespace?: string;
  /** Responses only: a freeform (`custom_tool_call`) call's raw input. */
  input?: string;
}

export interface Turn {
  text: string;
  toolCalls: ToolCall[];
  /** The API's own stop reason: chat `finish_reason`, Messages `stop_reason`, Responses `tool_call` or `completed`. */
  stop: string;
}

type Json = Record<string, unknown>;
export interface SseEvent {
  event: string | undefined;
  data: string;
}

/** The events of a complete SSE text (WHATWG framing: `\n`, `\r\n` or `\r` line ends, a blank line ends one). */
export function sseEvents(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split(/\r\n\r\n|\n\n|\r\r/)) {
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split(/\r\n|\n|\r/)) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (event !== undefined || data.length > 0) events.push({ event, data: data.join('\n') });
  }
  return events;
}

function parse(data: string, where: string): Json {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    assert.fail(`${where}: data is not JSON: ${data.slice(0, 200)}`);
  }
  assert.ok(
    value !== null && typeof value === 'object' && !Array.isArray(value),
    `${where}: data is not a JSON object`,
  );
  return value as Json;
}

/** Chat completions, streamed: chunks of one id, choice 0 only, tool calls opened with id and name, one finish, `[DONE]`. */
export function validateChatStream(text: string): Turn {
  const events = sseEvents(text);
  assert.ok(events.length > 0, 'no events');
  assert.equal(events[events.length - 1]?.data, '[DONE]', 'the stream ends with data: [DONE]');
  let id: string | undefined;
  let content = '';
  let finish: string | undefined;
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  events.slice(0, -1).forEach((e, n) => {
    const where = `chunk ${n}`;
    assert.notEqual(e.data, '[DONE]', `${where}: [DONE] before the end`);
    const chunk = parse(e.data, where);
    assert.equal(chunk.object, 'chat.completion.chunk', `${where}: object`);
    assert.equal(typeof chunk.id, 'string', `${where}: id`);
    id ??= chunk.id as string;
    assert.equal(chunk.id, id, `${where}: every chunk has the stream's id`);
    assert.ok(Array.isArray(chunk.choices), `${where}: choices`);
    for (const choice of chunk.choices as Json[]) {
      assert.equal(choice.index, 0, `${where}: one choice, index 0`);
      const delta = (choice.delta ?? {}) as Json;
      const hasPayload = (typeof delta.content === 'string' && delta.content !== '') || Array.isArray(delta.tool_calls);
      assert.ok(!(finish !== undefined && hasPayload), `${where}: content after finish_reason ${finish}`);
      if (typeof delta.content === 'string') content += delta.content;
      for (const call of (delta.tool_calls ?? []) as Json[]) {
        const index = call.index as number;
        const fn = (call.function ?? {}) as Json;
        if (calls[index] === undefined) {
          assert.equal(index, calls.length, `${where}: tool call indexes in order from 0`);
          assert.ok(typeof call.id === 'string' && call.id !== '', `${where}: a tool call opens with its id`);
          assert.equal(call.type, 'function', `${where}: a tool call opens with type function`);
          assert.ok(typeof fn.name === 'string' && fn.name !== '', `${where}: a tool call opens with its name`);
          calls[index] = { id: call.id as string, name: fn.name as string, arguments: '' };
        } else {
          assert.ok(call.id === undefined || call.id === calls[index].id, `${where}: a tool call keeps its id`);
        }
        if (typeof fn.arguments === 'string') (calls[index] as ToolCall).arguments += fn.arguments;
      }
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
        assert.equal(finish, undefined, `${where}: a second finish_reason`);
        finish = String(choice.finish_reason);
      }
    }
  });
  assert.ok(finish !== undefined, 'a finish_reason');
  return { text: content, toolCalls: calls, stop: finish };
}

/** Chat completions, JSON. */
export function validateChatJson(text: string): Turn {
  const body = parse(text, 'answer');
  assert.equal(body.object, 'chat.completion');
  assert.equal(typeof body.id, 'string');
  const choice = (body.choices as Json[] | undefined)?.[0];
  assert.ok(choice, 'choices[0]');
  const message = choice.message as Json;
  assert.equal(message.role, 'assistant');
  const calls = ((message.tool_calls ?? []) as Json[]).map((call, i) => {
    const fn = call.function as Json;
    assert.ok(
      typeof call.id === 'string' && typeof fn.name === 'string' && typeof fn.arguments === 'string',
      `tool_calls[${i}]`,
    );
    return { id: call.id, name: fn.name, arguments: fn.arguments } as ToolCall;
  });
  assert.equal(typeof choice.finish_reason, 'string', 'finish_reason');
  return {
    text: typeof message.content === 'string' ? message.content : '',
    toolCalls: calls,
    stop: choice.finish_reason as string,
  };
}

/** Anthropic's Messages API, JSON. */
export function validateMessagesJson(text: string): Turn {
  const body = parse(text, 'answer');
  assert.equal(body.type, 'message');
  assert.equal(body.role, 'assistant');
  assert.equal(typeof body.id, 'string');
  assert.equal(typeof body.stop_reason, 'string', 'stop_reason');
  let content = '';
  const calls: ToolCall[] = [];
  for (const block of body.content as Json[]) {
    if (block.type === 'text') content += String(block.text);
    if (block.type === 'tool_use') {
      assert.ok(typeof block.id === 'string' && typeof block.name === 'string', 'a tool_use has its id and name');
      assert.ok(
        block.input !== null && typeof block.input === 'object' && !Array.isArray(block.input),
        'a tool_use input is an object',
      );
      calls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input) });
    }
  }
  return { text: content, toolCalls: calls, stop: body.stop_reason as string };
}

const DELTA_OF_BLOCK: Record<string, string[]> = {
  text: ['text_delta', 'citations_delta'],
  tool_use: ['input_json_delta'],
  thinking: ['thinking_delta', 'signature_delta'],
  server_tool_use: ['input_json_delta'],
};

/** Anthropic's Messages API, streamed: message_start, blocks opened, fed and closed in index order, message_delta, message_stop. */
export function validateMessagesStream(text: string): Turn {
  const events = sseEvents(text);
  let started = false;
  let open: { index: number; type: string; json: string; id?: string; name?: string } | undefined;
  let nextIndex = 0;
  let stop: string | undefined;
  let stopped = false;
  let content = '';
  const calls: ToolCall[] = [];
  events.forEach((e, n) => {
    const data = parse(e.data, `event ${n}`);
    const where = `event ${n} (${String(data.type)})`;
    assert.equal(e.event, data.type, `${where}: the event name is the data's type`);
    assert.ok(!stopped, `${where}: after message_stop`);
    assert.notEqual(data.type, 'error', `${where}: ${e.data}`);
    if (data.type === 'message_start') {
      assert.ok(!started, `${where}: a second message_start`);
      const message = data.message as Json;
      assert.ok(
        typeof message.id === 'string' && message.type === 'message' && message.role === 'assistant',
        `${where}: the message`,
      );
      started = true;
      return;
    }
    assert.ok(started, `${where}: before message_start`);
    if (data.type === 'ping') return;
    if (data.type === 'content_block_start') {
      assert.equal(open, undefined, `${where}: block ${String(open?.index)} is still open`);
      assert.equal(data.index, nextIndex, `${where}: block indexes go 0, 1, 2...`);
      const block = data.content_block as Json;
      open = {
        index: nextIndex,
        type: String(block.type),
        json: '',
        ...(typeof block.id === 'string' ? { id: block.id } : {}),
        ...(typeof block.name === 'string' ? { name: block.name } : {}),
      };
      if (block.type === 'tool_use')
        assert.ok(open.id && open.name, `${where}: a tool_use block opens with its id and name`);
      if (block.type === 'text') content += String(block.text ?? '');
      nextIndex += 1;
    } else if (data.type === 'content_block_delta') {
      assert.ok(open && data.index === open.index, `${where}: a delta for the open block`);
      const delta = data.delta as Json;
      assert.ok(
        (DELTA_OF_BLOCK[open.type] ?? [String(delta.type)]).includes(String(delta.type)),
        `${where}: a ${String(delta.type)} in a ${open.type} block`,
      );
      if (delta.type === 'text_delta') content += String(delta.text);
      if (delta.type === 'input_json_delta') open.json += String(delta.partial_json);
    } else if (data.type === 'content_block_stop') {
      assert.ok(open && data.index === open.index, `${where}: closes the open block`);
      if (open.type === 'tool_use') {
        const input = JSON.parse(open.json === '' ? '{}' : open.json) as unknown;
        assert.ok(
          input !== null && typeof input === 'object' && !Array.isArray(input),
          `${where}: the tool input is a JSON object`,
        );
        calls.push({ id: open.id as string, name: open.name as string, arguments: JSON.stringify(input) });
      }
      open = undefined;
    } else if (data.type === 'message_delta') {
      assert.equal(open, undefined, `${where}: a block is still open`);
      assert.equal(stop, undefined, `${where}: a second message_delta with a stop reason`);
      const delta = data.delta as Json;
      assert.equal(typeof delta.stop_reason, 'string', `${where}: stop_reason`);
      assert.equal(typeof (data.usage as Json | undefined)?.output_tokens, 'number', `${where}: usage.output_tokens`);
      stop = delta.stop_reason as string;
    } else if (data.type === 'message_stop') {
      assert.ok(stop !== undefined, `${where}: message_stop without a message_delta`);
      stopped = true;
    } else {
      assert.fail(`${where}: not an event of the Messages API`);
    }
  });
  assert.ok(stopped, 'the stream ends with message_stop');
  return { text: content, toolCalls: calls, stop: stop as string };
}
