/**
 * Claude Code's own traffic, replayed through the gateway on every path a Messages request can take (issue 30).
 * The fixtures (test/fixtures/clients/claude-code-<version>/bash-tool-loop.json, the format of test/fixtures/clients/README.md) are what Claude Code sent on its default
 * settings, recorded against a logging mock: turn 1 (the prompt) and turn 2 (after the model's Bash tool_use, with
 * the thinking block and its signature sent back, the tool_result and the mid-conversation system message). Each is
 * replayed to a mock Anthropic upstream (forwarded untouched), a mock chat-completions upstream and a mock Gemini
 * upstream (translated), which also play the model: a Bash tool call on turn 1, an answer on turn 2.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../helpers/upstreams/anthropic.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { startGeminiUpstream, type GeminiUpstream } from '../helpers/upstreams/gemini.js';
import { call } from '../helpers/http.js';
import { namedEvents, readStream, type NamedEvent } from '../helpers/sse-client.js';
import { waitForValue } from '../helpers/wait.js';

interface Recorded {
  client: string;
  version: string;
  turn: number;
  request: { method: string; url: string; headers: Record<string, string>; body: Body };
}
type Block = Record<string, unknown> & { type: string };
type Body = Record<string, unknown> & {
  model: string;
  max_tokens: number;
  messages: Array<{ role: string; content: string | Block[] }>;
  system: Block[];
  tools: Array<Record<string, unknown>>;
};

const ROOT = new URL('../fixtures/clients/', import.meta.url);
const VERSIONS = readdirSync(ROOT)
  .filter((name) => name.startsWith('claude-code-'))
  .map((name) => name.slice('claude-code-'.length));
/** Turn `turn` (1 or 2) of the recorded tool loop, in the shared fixture format (test/fixtures/clients/README.md). */
function load(version: string, turn: number): Recorded {
  const fixture = JSON.parse(readFileSync(new URL(`claude-code-${version}/bash-tool-loop.json`, ROOT), 'utf8')) as {
    client: { name: string; version: string };
    requests: Array<{
      method: string;
      path: string;
      query: Record<string, string>;
      headers: Record<string, string>;
      body: Body;
    }>;
  };
  const request = fixture.requests[turn - 1];
  if (!request) throw new Error(`claude-code-${version}: no turn ${turn}`);
  const query = new URLSearchParams(request.query).toString();
  const url = query === '' ? request.path : `${request.path}?${query}`;
  return {
    client: fixture.client.name,
    version: fixture.client.version,
    turn,
    request: { method: request.method, url, headers: request.headers, body: request.body },
  };
}

/** What each recorded turn leaves out on a translated path, in the order the translation meets it. */
const DROPPED: Record<string, [string, string]> = {
  '2.1.197': [
    'context_management, system[1].cache_control, system[2].cache_control, messages[0].content[1].cache_control',
    'context_management, system[1].cache_control, system[2].cache_control, messages[3].content[0].cache_control',
  ],
  '2.1.328': [
    'context_management, system[1].cache_control, system[2].cache_control, messages[1].content[0].cache_control, thinking.display, tools[10]',
    'context_management, system[1].cache_control, system[2].cache_control, messages[3].content[0].cache_control, thinking.display, tools[10]',
  ],
};

const KEYS = {
  anthropic: 'sk-ant-upstream-cc-0123456789',
  chat: 'sk-chat-upstream-cc-0123456789',
  gemini: 'gemini-upstream-cc-0123456789',
};
const BASH_INPUT = { command: 'echo hi-from-tool', description: 'echo' };
const TOOL_OUTPUT = 'hi-from-tool';

/** What the logging mock answered Claude Code on turn 1 (Anthropic's events): a signed thinking block, then Bash. */
const ANTHROPIC_TOOL_TURN = [
  [
    'message_start',
    {
      type: 'message_start',
      message: {
        id: 'msg_cc1',
        type: 'message',
        role: 'assistant',
        model: 'claude',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 1 },
      },
    },
  ],
  [
    'content_block_start',
    { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
  ],
  [
    'content_block_delta',
    { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'I will run it.' } },
  ],
  [
    'content_block_delta',
    { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'SIGabc123' } },
  ],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  [
    'content_block_start',
    {
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: 'toolu_01', name: 'Bash', input: {} },
    },
  ],
  [
    'content_block_delta',
    {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: '{"command":"echo hi-from-tool",' },
    },
  ],
  [
    'content_block_delta',
    {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: '"description":"echo"}' },
    },
  ],
  ['content_block_stop', { type: 'content_block_stop', index: 1 }],
  [
    'message_delta',
    { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 20 } },
  ],
  ['message_stop', { type: 'message_stop' }],
].map(([event, data]) => `event: ${String(event)}\ndata: ${JSON.stringify(data)}\n\n`);

const chatChunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-cc', object: 'chat.completion.chunk', created: 1, model: 'gpt-5.5', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const CHAT_USAGE = `data: ${JSON.stringify({ id: 'chatcmpl-cc', object: 'chat.completion.chunk', created: 1, model: 'gpt-5.5', choices: [], usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 } })}\n\n`;
/** A chat model's Bash call, its arguments in two pieces. */
const CHAT_TOOL_TURN = [
  chatChunk({ role: 'assistant', content: null }),
  chatChunk({
    tool_calls: [{ index: 0, id: 'call_cc1', type: 'function', function: { name: 'Bash', arguments: '' } }],
  }),
  chatChunk({ tool_calls: [{ index: 0, function: { arguments: '{"command":"echo hi-from-tool",' } }] }),
  chatChunk({ tool_calls: [{ index: 0, function: { arguments: '"description":"echo"}' } }] }),
  chatChunk({}, 'tool_calls'),
  CHAT_USAGE,
  'data: [DONE]\n\n',
];
const CHAT_TEXT_TURN = [
  chatChunk({ role: 'assistant', content: '' }),
  chatChunk({ content: 'DONE' }),
  chatChunk({}, 'stop'),
  CHAT_USAGE,
  'data: [DONE]\n\n',
];

/** A Gemini model's thought, then its Bash call (signed), as Gemini streams them. */
const GEMINI_TOOL_TURN = [
  { candidates: [{ content: { role: 'model', parts: [{ text: 'Thinking about it', thought: true }] }, index: 0 }] },
  {
    candidates: [
      {
        content: {
          role: 'model',
          parts: [{ functionCall: { name: 'Bash', args: BASH_INPUT }, thoughtSignature: 'c2lnWFla' }],
        },
        finishReason: 'STOP',
        index: 0,
      },
    ],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
  },
].map((event) => JSON.stringify(event));
const GEMINI_TEXT_TURN = [
  JSON.stringify({
    candidates: [{ content: { role: 'model', parts: [{ text: 'DONE' }] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 1, totalTokenCount: 13 },
  }),
];

describe("Claude Code's recorded traffic through the gateway", () => {
  let anthropic: AnthropicUpstream;
  let chat: OpenAiUpstream;
  let gemini: GeminiUpstream;
  let gw: TestGateway;
  before(async () => {
    anthropic = await startAnthropicUpstream({ requiredKey: KEYS.anthropic });
    chat = await startOpenAiUpstream({ requiredKey: KEYS.chat });
    gemini = await startGeminiUpstream({ requiredKey: KEYS.gemini });
    gw = await startGateway({
      env: { CC_ANTHROPIC_KEY: KEYS.anthropic, CC_CHAT_KEY: KEYS.chat, CC_GEMINI_KEY: KEYS.gemini },
      configFile: {
        name: 'claude-code.yaml',
        text: [
          'upstreams:',
          `  - { name: claude, kind: anthropic, base_url: "${anthropic.baseUrl}", api_key_env: CC_ANTHROPIC_KEY }`,
          `  - { name: chat, kind: openai-compatible, base_url: "${chat.baseUrl}", api_key_env: CC_CHAT_KEY }`,
          `  - { name: google, kind: gemini, base_url: "${gemini.baseUrl}", api_key_env: CC_GEMINI_KEY }`,
          'models:',
          // Claude Code's own default model ids, served by Anthropic under the same name: the caller's bytes go as they are.
          '  - { id: claude-opus-5-5, upstream: claude }',
          '  - { id: claude-opus-4-8, upstream: claude }',
          '  - { id: cc-native-mapped, upstream: claude, upstream_model: claude-opus-5-5-20261101 }',
          '  - { id: cc-chat, upstream: chat, upstream_model: gpt-5.5 }',
          '  - { id: cc-gemini, upstream: google, upstream_model: gemini-3.1-pro-preview }',
          '  - { id: cc-strict, upstream: chat, upstream_model: gpt-5.5, translation: strict }',
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw.close();
    await Promise.all([anthropic.close(), chat.close(), gemini.close()]);
  });
  beforeEach(() => {
    anthropic.reset();
    chat.reset();
    gemini.reset();
  });

  /** Replays a recorded request (its URL, `?beta=true` included, and its headers) with the gateway's credential. */
  const replay = (recorded: Recorded, body: Body, auth: 'x-api-key' | 'bearer' = 'x-api-key') => {
    const headers: Record<string, string> = { ...recorded.request.headers };
    delete headers['x-api-key'];
    if (auth === 'x-api-key') headers['x-api-key'] = ADMIN_TOKEN;
    else headers.authorization = `Bearer ${ADMIN_TOKEN}`;
    return readStream(`${gw.url}${recorded.request.url}`, JSON.stringify(body), headers);
  };
  const accessLine = (requestId: unknown) =>
    waitForValue(
      'the access line',
      () =>
        gw.logLines
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((l) => l.request_id === requestId && l.route === 'messages'),
      (line) => line !== undefined,
    );

  for (const version of VERSIONS) {
    const turn1 = load(version, 1);
    const turn2 = load(version, 2);
    const [dropped1, dropped2] = DROPPED[version] ?? ['', ''];

    test(`${version}: the fixtures are Claude Code's, on its defaults (adaptive thinking, an effort, a mid-conversation system message, ?beta=true)`, () => {
      for (const recorded of [turn1, turn2]) {
        assert.equal(recorded.client, 'claude-code');
        assert.equal(recorded.version, version);
        assert.equal(recorded.request.url, '/v1/messages?beta=true');
        assert.match(
          recorded.request.headers['user-agent'] ?? '',
          new RegExp(`^claude-cli/${version.replaceAll('.', '\\.')} `),
        );
        assert.equal(
          recorded.request.body.thinking && (recorded.request.body.thinking as { type: string }).type,
          'adaptive',
        );
        assert.ok(recorded.request.body.messages.some((m) => m.role === 'system'));
      }
      assert.deepEqual(
        turn2.request.body.messages.map((m) => m.role),
        ['user', 'system', 'assistant', 'user'],
      );
    });

    test(`${version}: to Anthropic, both turns are forwarded byte for byte with their betas and ?beta=true; the answer comes back as Anthropic sent it`, async () => {
      for (const recorded of [turn1, turn2]) {
        anthropic.enqueue({ kind: 'raw', frames: ANTHROPIC_TOOL_TURN });
        const answer = await replay(recorded, recorded.request.body);
        assert.equal(answer.status, 200, answer.text.slice(0, 500));
        const received = anthropic.messageRequests().at(-1);
        assert.equal(received?.url, '/v1/messages?beta=true');
        assert.equal(received?.text, JSON.stringify(recorded.request.body), "the caller's bytes, untouched");
        assert.equal(received?.headers['anthropic-beta'], recorded.request.headers['anthropic-beta']);
        assert.equal(received?.headers['anthropic-version'], recorded.request.headers['anthropic-version']);
        assert.equal(received?.headers['x-api-key'], KEYS.anthropic);
        assert.equal(answer.text, ANTHROPIC_TOOL_TURN.join(''), "Anthropic's events, as they came");
        assert.equal(answer.headers['x-gateway-dropped-fields'], undefined);
      }
      // A model id the gateway maps: only `model` changes in the bytes.
      anthropic.enqueue({ kind: 'raw', frames: ANTHROPIC_TOOL_TURN });
      const mapped = await replay(turn2, { ...turn2.request.body, model: 'cc-native-mapped' }, 'bearer');
      assert.equal(mapped.status, 200, mapped.text.slice(0, 500));
      assert.equal(
        anthropic.messageRequests().at(-1)?.text,
        JSON.stringify({ ...turn2.request.body, model: 'claude-opus-5-5-20261101' }),
      );
    });

    test(`${version}: count_tokens?beta=true is counted by Anthropic for a native model, by the gateway for a translated one`, async () => {
      const { max_tokens: _max, stream: _stream, ...counted } = turn1.request.body;
      const headers = { ...turn1.request.headers, 'x-api-key': ADMIN_TOKEN };
      const native = await call(`${gw.url}/v1/messages/count_tokens?beta=true`, {
        method: 'POST',
        headers,
        body: JSON.stringify(counted),
      });
      assert.equal(native.status, 200, native.text);
      assert.deepEqual(native.json, { input_tokens: 42 * counted.messages.length });
      assert.equal(anthropic.requests.at(-1)?.url, '/v1/messages/count_tokens?beta=true');
      const translated = await call(`${gw.url}/v1/messages/count_tokens?beta=true`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ ...counted, model: 'cc-chat' }),
      });
      assert.equal(translated.status, 200, translated.text);
      assert.ok((translated.json as { input_tokens: number }).input_tokens > 1000, translated.text);
      assert.equal(chat.requests.length, 0);
    });

    test(`${version}: to a chat-completions upstream, translated: mapped fields, the dropped ones named, a complete stream with the tool call, the tool result back next turn`, async () => {
      chat.enqueue({ kind: 'stream', chunks: CHAT_TOOL_TURN });
      const first = await replay(turn1, { ...turn1.request.body, model: 'cc-chat' });
      assert.equal(first.status, 200, first.text.slice(0, 500));
      const sent = chat.chatRequests()[0]?.json as Record<string, unknown> & {
        messages: Array<Record<string, unknown>>;
        tools: Array<{ type: string; function: Record<string, unknown> }>;
      };
      const body = turn1.request.body;
      assert.equal(sent.model, 'gpt-5.5');
      assert.equal(sent.max_tokens, body.max_tokens);
      assert.equal(
        sent.reasoning_effort,
        (body.output_config as { effort: string }).effort,
        'output_config.effort is the reasoning effort',
      );
      assert.equal(sent.user, (body.metadata as { user_id: string }).user_id);
      for (const key of ['thinking', 'output_config', 'context_management', 'metadata'])
        assert.equal(key in sent, false, key);
      assert.deepEqual(
        sent.messages.map((m) => m.role),
        ['system', 'user', 'system'],
        'the mid-conversation system message in its place',
      );
      assert.equal(sent.messages[0]?.content, body.system.map((b) => b.text).join('\n\n'));
      assert.equal(sent.messages[2]?.content, systemTextOf(body.messages[1]?.content));
      const clientTools = body.tools.filter((t) => t.defer_loading !== true);
      assert.deepEqual(
        sent.tools.map((t) => t.function.name),
        clientTools.map((t) => t.name),
      );
      assert.deepEqual(sent.tools[1]?.function.parameters, clientTools[1]?.input_schema);
      assert.equal(first.headers['x-gateway-dropped-fields'], dropped1);
      assert.equal(
        (await accessLine(first.headers['x-request-id']))?.dropped_fields,
        dropped1.replaceAll(', ', ','),
        'the access line names them too',
      );
      const use = toolUseOf(namedEvents(first.text));
      assert.deepEqual([use.id, use.name, use.input], ['call_cc1', 'Bash', BASH_INPUT]);

      chat.enqueue({ kind: 'stream', chunks: CHAT_TEXT_TURN });
      const second = await replay(turn2, { ...withToolId(turn2.request.body, use.id), model: 'cc-chat' });
      assert.equal(second.status, 200, second.text.slice(0, 500));
      const next = chat.chatRequests()[1];
      const messages = (next?.json as { messages: Array<Record<string, unknown>> }).messages;
      assert.deepEqual(
        messages.map((m) => m.role),
        ['system', 'user', 'system', 'assistant', 'tool'],
      );
      assert.deepEqual(messages.slice(3), [
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_cc1', type: 'function', function: { name: 'Bash', arguments: JSON.stringify(BASH_INPUT) } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_cc1', content: TOOL_OUTPUT },
      ]);
      assert.equal(
        next?.body.includes('SIGabc123') || next?.body.includes('I will run it.'),
        false,
        'the earlier thinking block is left out',
      );
      assert.equal(second.headers['x-gateway-dropped-fields'], dropped2);
      assertTextAnswer(namedEvents(second.text), 'DONE');
    });

    test(`${version}: to a Gemini upstream, translated: thinkingConfig from the effort, system instructions, JSON Schema tools, the call and its result round-trip`, async () => {
      gemini.enqueue({ kind: 'raw-stream', data: GEMINI_TOOL_TURN });
      const first = await replay(turn1, { ...turn1.request.body, model: 'cc-gemini' }, 'bearer');
      assert.equal(first.status, 200, first.text.slice(0, 500));
      const sent = gemini.generateRequests()[0];
      const body = turn1.request.body;
      assert.equal(sent?.url, '/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent?alt=sse');
      const request = sent?.body as {
        contents: Array<{ role: string }>;
        systemInstruction: { parts: Array<{ text: string }> };
        generationConfig: Record<string, unknown>;
        tools: Array<{ functionDeclarations: Array<Record<string, unknown>> }>;
      };
      const effort = (body.output_config as { effort: string }).effort;
      assert.deepEqual(request.generationConfig, {
        maxOutputTokens: body.max_tokens,
        thinkingConfig: { thinkingLevel: effort.toUpperCase() },
      });
      assert.equal(
        request.systemInstruction.parts[0]?.text,
        [...body.system.map((b) => b.text), systemTextOf(body.messages[1]?.content)].join('\n\n'),
      );
      assert.deepEqual(
        request.contents.map((c) => c.role),
        ['user'],
      );
      const declarations = request.tools[0]?.functionDeclarations ?? [];
      const clientTools = body.tools.filter((t) => t.defer_loading !== true);
      assert.deepEqual(
        declarations.map((d) => d.name),
        clientTools.map((t) => t.name),
      );
      assert.deepEqual(
        declarations[1]?.parametersJsonSchema,
        clientTools[1]?.input_schema,
        'the schema as Claude Code wrote it ($schema included)',
      );
      assert.equal(first.headers['x-gateway-dropped-fields'], dropped1);
      const use = toolUseOf(namedEvents(first.text));
      assert.deepEqual([use.name, use.input], ['Bash', BASH_INPUT]);

      gemini.enqueue({ kind: 'raw-stream', data: GEMINI_TEXT_TURN });
      const second = await replay(turn2, { ...withToolId(turn2.request.body, use.id), model: 'cc-gemini' });
      assert.equal(second.status, 200, second.text.slice(0, 500));
      const contents = (gemini.generateRequests()[1]?.body as { contents: Array<{ role: string; parts: unknown[] }> })
        .contents;
      assert.deepEqual(contents.slice(1), [
        // Gemini 3 refuses an unsigned call of the current turn; chat kept no signature: Google's documented stand-in.
        {
          role: 'model',
          parts: [
            { functionCall: { name: 'Bash', args: BASH_INPUT }, thoughtSignature: 'skip_thought_signature_validator' },
          ],
        },
        { role: 'user', parts: [{ functionResponse: { name: 'Bash', response: { content: TOOL_OUTPUT } } }] },
      ]);
      assertTextAnswer(namedEvents(second.text), 'DONE');
    });

    test(`${version}: a model with translation: strict refuses the first field a translation would drop (400 capability_not_supported), nothing sent`, async () => {
      const refused = await replay(turn1, { ...turn1.request.body, model: 'cc-strict' });
      assert.equal(refused.status, 400, refused.text);
      const error = JSON.parse(refused.text) as {
        type: string;
        error: { type: string };
        code: string;
        details: { field: string; problem: string };
      };
      assert.deepEqual(
        [error.type, error.error.type, error.code, error.details.field],
        ['error', 'invalid_request_error', 'capability_not_supported', dropped1.split(', ')[0]],
      );
      assert.match(error.details.problem, /strict/);
      assert.equal(chat.requests.length, 0);
    });
  }
});

/** A system message's text as the translation joins it (a string, or text blocks). */
function systemTextOf(content: string | Block[] | undefined): string {
  return typeof content === 'string' ? content : (content ?? []).map((b) => b.text).join('\n\n');
}

/** Turn 2 as Claude Code would send it after the translated turn 1: the tool_use and tool_result under the id it got. */
function withToolId(body: Body, id: string): Body {
  const text = JSON.stringify(body).replaceAll('"toolu_01"', JSON.stringify(id));
  return JSON.parse(text) as Body;
}

/**
 * Checks a Messages stream is complete and well formed (message_start first, each block started, delta'd and stopped
 * under one increasing index, message_delta then message_stop last) and returns its one tool_use block, input
 * assembled from its input_json_delta pieces.
 */
function toolUseOf(events: NamedEvent[]): { id: string; name: string; input: unknown } {
  const blocks = checkStream(events);
  const delta = events.find((e) => e.event === 'message_delta')?.data as { delta: { stop_reason: string } };
  assert.equal(delta.delta.stop_reason, 'tool_use');
  const tools = blocks.filter((b) => b.start.type === 'tool_use');
  assert.equal(tools.length, 1, JSON.stringify(blocks));
  const tool = tools[0] as (typeof blocks)[number];
  return { id: String(tool.start.id), name: String(tool.start.name), input: JSON.parse(tool.json) };
}

function assertTextAnswer(events: NamedEvent[], text: string): void {
  const blocks = checkStream(events);
  assert.deepEqual(
    blocks.map((b) => [b.start.type, b.text]),
    [['text', text]],
  );
  assert.equal(
    (events.find((e) => e.event === 'message_delta')?.data as { delta: { stop_reason: string } }).delta.stop_reason,
    'end_turn',
  );
}

function checkStream(events: NamedEvent[]): Array<{ start: Record<string, unknown>; text: string; json: string }> {
  assert.equal(events[0]?.event, 'message_start');
  assert.deepEqual(
    events.slice(-2).map((e) => e.event),
    ['message_delta', 'message_stop'],
  );
  assert.equal(events.filter((e) => e.event === 'message_start').length, 1);
  const blocks: Array<{ start: Record<string, unknown>; text: string; json: string }> = [];
  let open: number | undefined;
  for (const { event, data } of events) {
    assert.equal(data.type, event);
    if (event === 'content_block_start') {
      assert.equal(open, undefined, 'a block starts only after the previous one stopped');
      assert.equal(data.index, blocks.length, 'indexes increase from 0');
      open = data.index as number;
      blocks.push({ start: data.content_block as Record<string, unknown>, text: '', json: '' });
    } else if (event === 'content_block_delta') {
      assert.equal(data.index, open);
      const delta = data.delta as { type: string; text?: string; partial_json?: string };
      const block = blocks[open as number] as (typeof blocks)[number];
      if (delta.type === 'text_delta') block.text += delta.text ?? '';
      else if (delta.type === 'input_json_delta') block.json += delta.partial_json ?? '';
    } else if (event === 'content_block_stop') {
      assert.equal(data.index, open);
      open = undefined;
    }
  }
  assert.equal(open, undefined, 'every block stopped');
  return blocks;
}
