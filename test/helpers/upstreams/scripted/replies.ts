/**
 * One scripted model turn — a tool call or a final text — written in each provider's own wire format, as the
 * provider sends it (JSON, or its event stream): OpenAI chat completions, OpenAI's Responses API, Anthropic's
 * Messages API, Gemini. The traffic recorder (scripts/record-traffic.ts) plays the upstream with these for each
 * SDK client, and the conformance replay (test/clients/conformance.test.ts) plays the gateway's upstreams with the same
 * turns, so a replayed turn 2 refers to the tool call id turn 1 really answered.
 */

export type ScriptedReply =
  | { type: 'tool_call'; id: string; name: string; arguments: string; namespace?: string; preamble?: Preamble }
  | { type: 'custom_tool_call'; id: string; name: string; input: string; namespace?: string }
  | { type: 'text'; text: string };

/**
 * The text the model writes before its tool call, in the same turn (as Claude usually does). On the Responses API it
 * is an output message before the call; `id` is that message's id as the recording server gave it (the recorder
 * fills it in), which a client that stores responses (the AI SDK's default) refers to in its next call by
 * `item_reference`.
 */
export interface Preamble {
  text: string;
  id?: string;
}

/**
 * A call the upstream refused: the HTTP status and the API's error object (Anthropic's `{type, message, details}`),
 * written as that API's error body (refusalBody). The recording server refuses a Messages call that asks for a thread
 * this way (THREAD_REFUSAL).
 */
export interface ScriptedRefusal {
  type: 'refusal';
  status: number;
  error: Record<string, unknown>;
}

/** What a model call is answered with: a turn, or a refusal. */
export type ScriptedAnswer = ScriptedReply | ScriptedRefusal;

/**
 * Anthropic's refusal of a thread it cannot hold (`thread_unsupported_request`, what its SDKs fall back from by
 * sending the whole conversation without `thread`), as the gateway answers on a translated path (docs/messages.md,
 * "Message threads"): the recording server holds no threads.
 */
export const THREAD_REFUSAL: ScriptedRefusal = {
  type: 'refusal',
  status: 400,
  error: {
    type: 'invalid_request_error',
    message: 'This model cannot keep a message thread; send the whole conversation without `thread`.',
    details: { error_code: 'thread_unsupported_request', unsupported: ['model'] },
  },
};

/** A refusal as its API's error body: Anthropic's `{type: "error", error}`, the others' `{error}`. */
export function refusalBody(refusal: ScriptedRefusal, api: string): Record<string, unknown> {
  return api === 'messages' ? { type: 'error', error: refusal.error } : { error: refusal.error };
}

/** A call as every wire can carry it: a function tool call of a plain name, or a text. */
export type FunctionReply = Exclude<ScriptedReply, { type: 'custom_tool_call' }> & { namespace?: undefined };

/** The namespace whose functions keep their own names on a wire without namespaces (OpenAI's `functions.exec`). */
const DEFAULT_NAMESPACE = 'functions';

/**
 * The name a Responses tool has on a wire that knows no namespaces (chat, Messages, Gemini), as the gateway declares
 * it there (docs/responses.md, "Tools"): `<namespace>__<name>` for a function of a namespace tool, its own name in
 * `functions` or outside any namespace.
 */
export function functionName(name: string, namespace: string | undefined): string {
  return namespace === undefined || namespace === DEFAULT_NAMESPACE ? name : `${namespace}__${name}`;
}

/**
 * A call of the Responses API's own kinds (a namespaced function, a freeform `custom` tool) as a wire without them
 * carries it: the function the gateway declares for that tool — its flat name, and for a custom tool the one string
 * parameter `input` holding the raw text. A model behind chat, Messages or Gemini answers that function.
 */
export function asFunctionReply(reply: ScriptedReply): FunctionReply {
  if (reply.type === 'text') return reply;
  const name = functionName(reply.name, reply.namespace);
  const args = reply.type === 'custom_tool_call' ? JSON.stringify({ input: reply.input }) : reply.arguments;
  const preamble = reply.type === 'tool_call' && reply.preamble ? { preamble: reply.preamble } : {};
  return { type: 'tool_call', id: reply.id, name, arguments: args, ...preamble };
}

/** A whole answer: a JSON body, or the event stream's frames (each one write, SSE framing included). */
export type WireAnswer = { json: Record<string, unknown> } | { frames: string[] };

type Json = Record<string, unknown>;

const CREATED = 1_767_225_600; // 2026-01-01T00:00:00Z: fixed, so a recording does not change from run to run
const USAGE = { input: 42, output: 12 };

/** `text` in a few pieces, as providers stream it (at least one piece, never empty ones). */
export function pieces(text: string, count = 3): string[] {
  const size = Math.max(1, Math.ceil(text.length / count));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length > 0 ? out : [''];
}

function data(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

function event(name: string, value: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(value)}\n\n`;
}

/** OpenAI chat completions; `serial` makes the completion id. */
export function chatAnswer(scripted: ScriptedReply, body: Json, serial: number): WireAnswer {
  const reply = asFunctionReply(scripted);
  const id = `chatcmpl-scripted${String(serial).padStart(4, '0')}`;
  const model = String(body.model ?? 'model');
  const usage = {
    prompt_tokens: USAGE.input,
    completion_tokens: USAGE.output,
    total_tokens: USAGE.input + USAGE.output,
  };
  const finish = reply.type === 'tool_call' ? 'tool_calls' : 'stop';
  if (body.stream !== true) {
    const message =
      reply.type === 'tool_call'
        ? {
            role: 'assistant',
            content: reply.preamble?.text ?? null,
            tool_calls: [
              { id: reply.id, type: 'function', function: { name: reply.name, arguments: reply.arguments } },
            ],
            refusal: null,
          }
        : { role: 'assistant', content: reply.text, refusal: null };
    return {
      json: {
        id,
        object: 'chat.completion',
        created: CREATED,
        model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
        usage,
      },
    };
  }
  const chunk = (delta: Json, finishReason: string | null = null): string =>
    data({
      id,
      object: 'chat.completion.chunk',
      created: CREATED,
      model,
      system_fingerprint: null,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    });
  const frames: string[] = [];
  if (reply.type === 'tool_call') {
    const call = { index: 0, id: reply.id, type: 'function', function: { name: reply.name, arguments: '' } };
    if (reply.preamble) {
      frames.push(chunk({ role: 'assistant', content: '', refusal: null }));
      for (const part of pieces(reply.preamble.text)) frames.push(chunk({ content: part }));
      frames.push(chunk({ tool_calls: [call] }));
    } else frames.push(chunk({ role: 'assistant', content: null, tool_calls: [call], refusal: null }));
    for (const part of pieces(reply.arguments))
      frames.push(chunk({ tool_calls: [{ index: 0, function: { arguments: part } }] }));
  } else {
    frames.push(chunk({ role: 'assistant', content: '', refusal: null }));
    for (const part of pieces(reply.text)) frames.push(chunk({ content: part }));
  }
  frames.push(chunk({}, finish));
  const options = body.stream_options as { include_usage?: unknown } | undefined;
  if (options?.include_usage === true)
    frames.push(
      data({
        id,
        object: 'chat.completion.chunk',
        created: CREATED,
        model,
        system_fingerprint: null,
        choices: [],
        usage,
      }),
    );
  frames.push('data: [DONE]\n\n');
  return { frames };
}

/** The id of the output message a scripted Responses answer `serial` holds (its text, or a tool call's preamble). */
export function responsesMessageId(serial: number): string {
  return `msg_scripted${String(serial).padStart(4, '0')}`;
}

/**
 * OpenAI's Responses API: a function_call (namespaced or not) or custom_tool_call item (after a message holding its
 * preamble, if it has one) or a message, with the full event sequence when streamed.
 */
export function responsesAnswer(reply: ScriptedReply, body: Json, serial: number): WireAnswer {
  const suffix = String(serial).padStart(4, '0');
  const base = {
    id: `resp_scripted${suffix}`,
    object: 'response',
    created_at: CREATED,
    model: String(body.model ?? 'model'),
    status: 'in_progress',
    output: [] as unknown[],
    usage: null as unknown,
  };
  const usage = {
    input_tokens: USAGE.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: USAGE.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: USAGE.input + USAGE.output,
  };
  const namespace = reply.type !== 'text' && reply.namespace !== undefined ? { namespace: reply.namespace } : {};
  const message = (text: string) => ({
    id: responsesMessageId(serial),
    type: 'message',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', annotations: [], logprobs: [], text }],
  });
  const item =
    reply.type === 'tool_call'
      ? {
          id: `fc_scripted${suffix}`,
          type: 'function_call',
          status: 'completed',
          arguments: reply.arguments,
          call_id: reply.id,
          name: reply.name,
          ...namespace,
        }
      : reply.type === 'custom_tool_call'
        ? {
            id: `ctc_scripted${suffix}`,
            type: 'custom_tool_call',
            status: 'completed',
            input: reply.input,
            call_id: reply.id,
            name: reply.name,
            ...namespace,
          }
        : message(reply.text);
  const preamble = reply.type === 'tool_call' ? reply.preamble : undefined;
  const output = preamble ? [message(preamble.text), item] : [item];
  const done = { ...base, status: 'completed', output, usage };
  if (body.stream !== true) return { json: done };
  let sequence = 0;
  const frames: string[] = [];
  const send = (type: string, value: Json): void =>
    void frames.push(event(type, { type, sequence_number: sequence++, ...value }));
  const sendMessage = (index: number, text: string): void => {
    const finished = output[index] as ReturnType<typeof message>;
    const at = { item_id: finished.id, output_index: index, content_index: 0 };
    send('response.output_item.added', {
      output_index: index,
      item: { ...finished, status: 'in_progress', content: [] },
    });
    send('response.content_part.added', {
      ...at,
      part: { type: 'output_text', annotations: [], logprobs: [], text: '' },
    });
    for (const part of pieces(text)) send('response.output_text.delta', { ...at, delta: part, logprobs: [] });
    send('response.output_text.done', { ...at, text, logprobs: [] });
    send('response.content_part.done', { ...at, part: { type: 'output_text', annotations: [], logprobs: [], text } });
    send('response.output_item.done', { output_index: index, item: finished });
  };
  send('response.created', { response: base });
  send('response.in_progress', { response: base });
  if (preamble) sendMessage(0, preamble.text);
  const index = output.length - 1;
  if (reply.type === 'tool_call') {
    send('response.output_item.added', {
      output_index: index,
      item: { ...item, status: 'in_progress', arguments: '' },
    });
    for (const part of pieces(reply.arguments))
      send('response.function_call_arguments.delta', { item_id: item.id, output_index: index, delta: part });
    send('response.function_call_arguments.done', {
      item_id: item.id,
      output_index: index,
      arguments: reply.arguments,
    });
    send('response.output_item.done', { output_index: index, item });
  } else if (reply.type === 'custom_tool_call') {
    send('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', input: '' } });
    for (const part of pieces(reply.input))
      send('response.custom_tool_call_input.delta', { item_id: item.id, output_index: 0, delta: part });
    send('response.custom_tool_call_input.done', { item_id: item.id, output_index: 0, input: reply.input });
    send('response.output_item.done', { output_index: 0, item });
  } else sendMessage(0, reply.text);
  send('response.completed', { response: done });
  return { frames };
}

/** The id of the message a Messages answer of call `serial` carries. */
export function messageIdOf(serial: number): string {
  return `msg_01Scripted${String(serial).padStart(4, '0')}`;
}

/**
 * A turn as the content blocks of Anthropic's message: a tool_use block (its input an object; after a text block
 * holding its preamble, if it has one) or a text block.
 */
export function messageContentOf(scripted: ScriptedReply): Json[] {
  const reply = asFunctionReply(scripted);
  if (reply.type !== 'tool_call') return [{ type: 'text', text: reply.text }];
  return [
    ...(reply.preamble ? [{ type: 'text', text: reply.preamble.text }] : []),
    { type: 'tool_use', id: reply.id, name: reply.name, input: JSON.parse(reply.arguments) as unknown },
  ];
}

/** Anthropic's Messages API: a tool_use block (after a text block holding its preamble, if it has one), or a text block. */
export function messagesAnswer(scripted: ScriptedReply, body: Json, serial: number): WireAnswer {
  const reply = asFunctionReply(scripted);
  const id = messageIdOf(serial);
  const model = String(body.model ?? 'claude');
  const stop = reply.type === 'tool_call' ? 'tool_use' : 'end_turn';
  const usage = {
    input_tokens: USAGE.input,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: USAGE.output,
  };
  const preamble = reply.type === 'tool_call' ? reply.preamble : undefined;
  if (body.stream !== true) {
    const content = messageContentOf(reply);
    return {
      json: { id, type: 'message', role: 'assistant', model, content, stop_reason: stop, stop_sequence: null, usage },
    };
  }
  const frames: string[] = [];
  const send = (type: string, value: Json): void => void frames.push(event(type, { type, ...value }));
  send('message_start', {
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
  const textBlock = (index: number, text: string): void => {
    send('content_block_start', { index, content_block: { type: 'text', text: '' } });
    if (index === 0) send('ping', {});
    for (const part of pieces(text)) send('content_block_delta', { index, delta: { type: 'text_delta', text: part } });
  };
  if (preamble) {
    textBlock(0, preamble.text);
    send('content_block_stop', { index: 0 });
  }
  const index = preamble ? 1 : 0;
  if (reply.type === 'tool_call') {
    send('content_block_start', {
      index,
      content_block: { type: 'tool_use', id: reply.id, name: reply.name, input: {} },
    });
    if (index === 0) send('ping', {});
    for (const part of ['', ...pieces(reply.arguments)])
      send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } });
  } else textBlock(0, reply.text);
  send('content_block_stop', { index });
  send('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: USAGE.output } });
  send('message_stop', {});
  return { frames };
}

/** Gemini's generateContent / streamGenerateContent (`alt=sse`: CRLF framing, no end marker). Gemini has no call ids. */
export function geminiAnswer(scripted: ScriptedReply, body: Json, stream: boolean, model: string): WireAnswer {
  const reply = asFunctionReply(scripted);
  const usageMetadata = {
    promptTokenCount: USAGE.input,
    candidatesTokenCount: USAGE.output,
    totalTokenCount: USAGE.input + USAGE.output,
  };
  const candidate = (parts: unknown[], finish?: string): Json => ({
    content: { parts, role: 'model' },
    ...(finish ? { finishReason: finish } : {}),
    index: 0,
  });
  if (reply.type === 'tool_call') {
    const call = { functionCall: { name: reply.name, args: JSON.parse(reply.arguments) as unknown } };
    const preamble = reply.preamble?.text;
    const answer = {
      candidates: [candidate([...(preamble !== undefined && !stream ? [{ text: preamble }] : []), call], 'STOP')],
      usageMetadata,
      modelVersion: model,
    };
    // Streamed, a preamble comes first in frames of its own; the call, the finish reason and the usage last.
    const before =
      preamble === undefined
        ? []
        : pieces(preamble).map((text) => ({ candidates: [candidate([{ text }])], modelVersion: model }));
    return stream
      ? { frames: [...before, answer].map((frame) => `data: ${JSON.stringify(frame)}\r\n\r\n`) }
      : { json: answer };
  }
  if (!stream)
    return { json: { candidates: [candidate([{ text: reply.text }], 'STOP')], usageMetadata, modelVersion: model } };
  const parts = pieces(reply.text);
  return {
    frames: parts.map((text, i) => {
      const last = i === parts.length - 1;
      return `data: ${JSON.stringify({ candidates: [candidate([{ text }], last ? 'STOP' : undefined)], ...(last ? { usageMetadata } : {}), modelVersion: model })}\r\n\r\n`;
    }),
  };
}
