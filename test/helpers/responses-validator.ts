/**
 * The Responses API's validator (see wire-validators.ts): a JSON response, or its event stream — response.created
 * first, output items added and done in output_index order with the same ids, deltas of an open item adding up to
 * what its `.done` event and the final output say, sequence numbers increasing, response.completed last.
 */
import assert from 'node:assert/strict';
import { sseEvents, type ToolCall, type Turn } from './wire-validators.js';

type Json = Record<string, unknown>;

function turnOf(output: Json[], where: string): Turn {
  let text = '';
  const calls: ToolCall[] = [];
  output.forEach((item, i) => {
    assert.equal(typeof item.type, 'string', `${where} output[${i}].type`);
    if (item.type === 'message') {
      for (const part of (item.content ?? []) as Json[]) if (part.type === 'output_text') text += String(part.text);
    }
    if (item.type !== 'function_call' && item.type !== 'custom_tool_call') return;
    assert.ok(
      typeof item.call_id === 'string' && typeof item.name === 'string',
      `${where} output[${i}]: call_id, name`,
    );
    assert.ok(item.namespace === undefined || typeof item.namespace === 'string', `${where} output[${i}]: namespace`);
    const namespace = item.namespace === undefined ? {} : { namespace: item.namespace as string };
    if (item.type === 'function_call') {
      assert.equal(typeof item.arguments, 'string', `${where} output[${i}]: arguments`);
      calls.push({ id: item.call_id, name: item.name, arguments: item.arguments as string, ...namespace });
    } else {
      assert.equal(typeof item.input, 'string', `${where} output[${i}]: input`);
      calls.push({ id: item.call_id, name: item.name, arguments: '', input: item.input as string, ...namespace });
    }
  });
  return { text, toolCalls: calls, stop: calls.length > 0 ? 'tool_call' : 'completed' };
}

export function validateResponsesJson(text: string): Turn {
  const body = JSON.parse(text) as Json;
  assert.equal(body.object, 'response');
  assert.equal(typeof body.id, 'string');
  assert.equal(body.status, 'completed');
  assert.ok(Array.isArray(body.output), 'output');
  return turnOf(body.output as Json[], 'response');
}

interface OpenItem {
  id: string;
  type: string;
  /** A function call's arguments, or a custom tool call's input, as the deltas added them up. */
  arguments: string;
  parts: Map<number, string>;
  done: boolean;
}

// The stream's rules, one event at a time; a function per family keeps each one readable.
class ResponsesStream {
  private responseId: string | undefined;
  private sequence = -1;
  private readonly items: OpenItem[] = [];
  private readonly doneItems: Json[] = [];
  completed: Json | undefined;

  check(type: string, data: Json, where: string): void {
    assert.equal(this.completed, undefined, `${where}: after response.completed`);
    if (typeof data.sequence_number === 'number') {
      assert.ok(
        data.sequence_number > this.sequence,
        `${where}: sequence_number ${data.sequence_number} after ${this.sequence}`,
      );
      this.sequence = data.sequence_number;
    }
    if (type === 'response.created') return this.created(data, where);
    assert.ok(this.responseId !== undefined, `${where}: before response.created`);
    if (type === 'response.in_progress') return this.sameResponse(data, where);
    if (type === 'response.completed') return this.complete(data, where);
    assert.ok(
      !['response.failed', 'response.incomplete', 'error'].includes(type),
      `${where}: ${JSON.stringify(data).slice(0, 300)}`,
    );
    if (type === 'response.output_item.added' || type === 'response.output_item.done')
      return this.item(type, data, where);
    this.delta(type, data, where);
  }

  private created(data: Json, where: string): void {
    assert.equal(this.responseId, undefined, `${where}: a second response.created`);
    const response = data.response as Json;
    assert.equal(typeof response.id, 'string', `${where}: response.id`);
    this.responseId = response.id as string;
  }

  private sameResponse(data: Json, where: string): void {
    assert.equal((data.response as Json).id, this.responseId, `${where}: the same response id`);
  }

  private item(type: string, data: Json, where: string): void {
    const index = data.output_index as number;
    const item = data.item as Json;
    assert.equal(typeof item.id, 'string', `${where}: item.id`);
    if (type === 'response.output_item.added') {
      assert.equal(index, this.items.length, `${where}: output_index in order from 0`);
      this.items.push({ id: item.id as string, type: String(item.type), arguments: '', parts: new Map(), done: false });
      return;
    }
    const open = this.items[index];
    assert.ok(open && !open.done, `${where}: done for an item that is not open`);
    assert.equal(item.id, open.id, `${where}: the item keeps its id`);
    if (open.type === 'function_call') assert.equal(item.arguments, open.arguments, `${where}: arguments = the deltas`);
    if (open.type === 'custom_tool_call') assert.equal(item.input, open.arguments, `${where}: input = the deltas`);
    if (open.type === 'message') {
      const texts = ((item.content ?? []) as Json[]).map((p) => String(p.text ?? ''));
      assert.deepEqual(texts, [...open.parts.values()], `${where}: content = the deltas`);
    }
    open.done = true;
    this.doneItems.push(item);
  }

  private open(data: Json, where: string): OpenItem {
    const open = this.items[data.output_index as number];
    assert.ok(open && !open.done, `${where}: for output_index ${String(data.output_index)}, which is not open`);
    assert.equal(data.item_id, open.id, `${where}: item_id of the open item`);
    return open;
  }

  /** The open item an event of a call's payload is for, which must be a call of that kind. */
  private openCall(data: Json, where: string, kind: 'function_call' | 'custom_tool_call'): OpenItem {
    const open = this.open(data, where);
    assert.equal(open.type, kind, `${where}: for an item of type ${open.type}`);
    return open;
  }

  private delta(type: string, data: Json, where: string): void {
    if (type === 'response.function_call_arguments.delta')
      this.openCall(data, where, 'function_call').arguments += String(data.delta);
    else if (type === 'response.function_call_arguments.done')
      assert.equal(
        data.arguments,
        this.openCall(data, where, 'function_call').arguments,
        `${where}: arguments = the deltas`,
      );
    // A custom tool call's input streams as its own deltas; kept where a function call's arguments are.
    else if (type === 'response.custom_tool_call_input.delta')
      this.openCall(data, where, 'custom_tool_call').arguments += String(data.delta);
    else if (type === 'response.custom_tool_call_input.done')
      assert.equal(
        data.input,
        this.openCall(data, where, 'custom_tool_call').arguments,
        `${where}: input = the deltas`,
      );
    else if (type === 'response.content_part.added') {
      const open = this.open(data, where);
      assert.equal(data.content_index, open.parts.size, `${where}: content_index in order`);
      open.parts.set(data.content_index as number, '');
    } else if (type === 'response.output_text.delta') {
      const open = this.open(data, where);
      assert.ok(open.parts.has(data.content_index as number), `${where}: a delta for a part that was not added`);
      open.parts.set(
        data.content_index as number,
        `${open.parts.get(data.content_index as number) ?? ''}${String(data.delta)}`,
      );
    } else if (type === 'response.output_text.done' || type === 'response.content_part.done') {
      const open = this.open(data, where);
      const text = type === 'response.output_text.done' ? data.text : (data.part as Json).text;
      assert.equal(text, open.parts.get(data.content_index as number), `${where}: text = the deltas`);
    } else {
      // Other events (reasoning summaries, annotations, web search progress) are the upstream's to send; they
      // must still belong to an open item when they name one.
      if (typeof data.item_id === 'string') this.open(data, where);
    }
  }

  private complete(data: Json, where: string): void {
    const response = data.response as Json;
    assert.equal(response.id, this.responseId, `${where}: the same response id`);
    assert.equal(response.status, 'completed', `${where}: status`);
    assert.ok(
      this.items.every((i) => i.done),
      `${where}: an output item was never done`,
    );
    const output = response.output as Json[];
    assert.deepEqual(
      output.map((i) => i.id),
      this.doneItems.map((i) => i.id),
      `${where}: output = the items done`,
    );
    this.completed = response;
  }
}

export function validateResponsesStream(text: string): Turn {
  const stream = new ResponsesStream();
  sseEvents(text).forEach((e, n) => {
    const data = JSON.parse(e.data) as Json;
    const where = `event ${n} (${String(data.type)})`;
    assert.equal(e.event, data.type, `${where}: the event name is the data's type`);
    stream.check(String(data.type), data, where);
  });
  assert.ok(stream.completed, 'the stream ends with response.completed');
  return turnOf(stream.completed.output as Json[], 'response.completed');
}
