/**
 * The tolerant Responses translation, pure functions: tool names that map back (namespaces, freeform tools,
 * collisions), what is left out by name, web search as each provider's own tool. Codex's own traffic through the
 * whole gateway: test/clients/codex-traffic.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { completionToResponse, outputAsMessages } from '../../../src/surfaces/responses/chat-to-response.js';
import { responseShell } from '../../../src/surfaces/responses/response-object.js';
import { responseJson } from '../../../src/surfaces/responses/response-json.js';
import { responsesToChat, type TranslationOptions } from '../../../src/surfaces/responses/request-to-chat.js';
import type { ResponsesRequest } from '../../../src/surfaces/responses/responses-types.js';
import { toAnthropicRequest } from '../../../src/providers/anthropic/translate-request.js';
import { toGeminiRequest } from '../../../src/providers/gemini/translate-request.js';
import type { ChatExtra } from '../../../src/providers/provider-contract.js';

/** A tolerant translation, and the fields it named. */
function tolerant(body: ResponsesRequest, carried: ChatExtra[] | 'all' = 'all') {
  const dropped: string[] = [];
  const options: TranslationOptions = {
    notes: { drop: (field) => dropped.push(field) },
    carries: (field) => carried === 'all' || carried.includes(field),
  };
  return { ...responsesToChat(body, [], options), dropped };
}

const fn = (name: string) => ({ type: 'function', name, parameters: { type: 'object', properties: {} } });
const chatNames = (tools: unknown) => (tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
const completion = (calls: Array<{ name: string; arguments: string }>) =>
  JSON.stringify({
    model: 'm',
    choices: [
      {
        message: {
          role: 'assistant',
          content: null,
          tool_calls: calls.map((c, i) => ({ id: `call_${i}`, type: 'function', function: c })),
        },
        finish_reason: 'tool_calls',
      },
    ],
  });

describe('Responses tools as chat tools, and their calls back', () => {
  test('namespaces flatten to names chat takes; a taken, dotted or long name gets a hashed one; each call maps back to its own tool', () => {
    const long = 'x'.repeat(100);
    const body: ResponsesRequest = {
      model: 'm',
      input: 'hi',
      tools: [
        { type: 'namespace', name: 'multi_agent_v1', description: 'Sub-agents.', tools: [fn('wait_agent'), fn(long)] },
        fn('multi_agent_v1__wait_agent'), // a plain tool that already has the flat name: it keeps it
        { type: 'namespace', name: 'mcp.github', description: '', tools: [fn('list_issues')] },
        {
          type: 'namespace',
          name: 'functions',
          description: '',
          tools: [{ type: 'custom', name: 'exec', description: 'Run JS.' }],
        },
      ],
    };
    const { chat, names } = tolerant(body);
    const declared = chatNames(chat.tools);
    assert.equal(declared.length, 5);
    for (const name of declared) assert.match(name, /^[a-zA-Z0-9_-]{1,64}$/);
    assert.equal(new Set(declared).size, 5, 'no two tools share a chat name');
    assert.ok(declared.includes('multi_agent_v1__wait_agent') && declared.includes('exec'), declared.join());
    const namespaced = declared[0] as string;
    assert.match(namespaced, /^multi_agent_v1__wait_agent_[0-9a-f]{8}$/);
    assert.deepEqual(names.callerTool(namespaced), {
      kind: 'function',
      name: 'wait_agent',
      namespace: 'multi_agent_v1',
    });
    assert.deepEqual(names.callerTool('multi_agent_v1__wait_agent'), {
      kind: 'function',
      name: 'multi_agent_v1__wait_agent',
    });
    assert.deepEqual(names.callerTool(declared[1] as string), {
      kind: 'function',
      name: long,
      namespace: 'multi_agent_v1',
    });
    assert.deepEqual(names.callerTool(declared[3] as string), {
      kind: 'function',
      name: 'list_issues',
      namespace: 'mcp.github',
    });
    assert.deepEqual(names.callerTool('exec'), { kind: 'custom', name: 'exec', namespace: 'functions' });

    const response = completionToResponse(
      completion([
        { name: namespaced, arguments: '{"targets":["a"]}' },
        { name: 'multi_agent_v1__wait_agent', arguments: '{}' },
        { name: 'exec', arguments: '{"input":"text(1)"}' },
        { name: 'unknown_tool', arguments: '{}' },
      ]),
      responseShell(body, 'resp_1', 1),
      names,
    );
    assert.deepEqual(
      response.output.map(({ id: _id, ...item }) => item),
      [
        {
          type: 'function_call',
          call_id: 'call_0',
          name: 'wait_agent',
          namespace: 'multi_agent_v1',
          arguments: '{"targets":["a"]}',
          status: 'completed',
        },
        {
          type: 'function_call',
          call_id: 'call_1',
          name: 'multi_agent_v1__wait_agent',
          arguments: '{}',
          status: 'completed',
        },
        {
          type: 'custom_tool_call',
          call_id: 'call_2',
          name: 'exec',
          namespace: 'functions',
          input: 'text(1)',
          status: 'completed',
        },
        { type: 'function_call', call_id: 'call_3', name: 'unknown_tool', arguments: '{}', status: 'completed' },
      ],
    );
    assert.equal(responseJson(response), JSON.stringify(response));
    // Stored for previous_response_id: the calls as they went upstream.
    assert.deepEqual(
      outputAsMessages(response.output, names)[0]?.tool_calls?.map((c) => c.function),
      [
        { name: namespaced, arguments: '{"targets":["a"]}' },
        { name: 'multi_agent_v1__wait_agent', arguments: '{}' },
        { name: 'exec', arguments: '{"input":"text(1)"}' },
        { name: 'unknown_tool', arguments: '{}' },
      ],
    );
  });

  test('a freeform tool is a function of one string, its grammar told; its call is the input, or a 502 when it carries none', () => {
    const body: ResponsesRequest = {
      model: 'm',
      input: 'hi',
      tools: [
        {
          type: 'custom',
          name: 'apply_patch',
          description: 'Edit files.',
          format: { type: 'grammar', syntax: 'lark', definition: 'start: "*** Begin Patch"' },
        },
      ],
    };
    const { chat, names } = tolerant(body);
    const declared = (
      chat.tools as Array<{
        function: {
          description: string;
          parameters: { properties: { input: { type: string; description: string } }; required: string[] };
        };
      }>
    )[0]?.function;
    assert.equal(declared?.description, 'Edit files.');
    assert.equal(declared?.parameters.properties.input.type, 'string');
    assert.deepEqual(declared?.parameters.required, ['input']);
    assert.ok(declared?.parameters.properties.input.description.endsWith('lark grammar:\nstart: "*** Begin Patch"'));
    const renamed = completionToResponse(
      completion([{ name: 'apply_patch', arguments: '{"patch":"*** Begin Patch"}' }]),
      responseShell(body, 'r', 1),
      names,
    );
    assert.equal(
      (renamed.output[0] as { input: string }).input,
      '*** Begin Patch',
      'a model that renamed the one parameter',
    );
    for (const args of ['{"input":5}', '{"a":"x","b":"y"}', '[1]']) {
      assert.throws(
        () =>
          completionToResponse(
            completion([{ name: 'apply_patch', arguments: args }]),
            responseShell(body, 'r', 1),
            names,
          ),
        (error: { code?: string }) => error.code === 'upstream_invalid_response',
        args,
      );
    }
  });

  test('a function and a custom tool of one name cannot be told apart upstream: a 400 naming the second', () => {
    assert.throws(
      () => tolerant({ model: 'm', input: 'hi', tools: [fn('run'), { type: 'custom', name: 'run' }] }),
      (error: { code?: string; details?: { errors: Array<{ field: string }> } }) =>
        error.code === 'validation_failed' && error.details?.errors[0]?.field === 'tools[1].name',
    );
  });

  test("earlier calls come back as the upstream's own: a custom call's input as its arguments, a namespaced call by its flat name; reasoning left out by name", () => {
    const { chat, dropped } = tolerant({
      model: 'm',
      tools: [
        { type: 'custom', name: 'apply_patch' },
        { type: 'namespace', name: 'ns', description: '', tools: [fn('go')] },
      ],
      input: [
        { role: 'user', content: 'patch it' },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'ENC' },
        { type: 'custom_tool_call', call_id: 'c1', name: 'apply_patch', input: 'PATCH' },
        { type: 'function_call', call_id: 'c2', name: 'go', namespace: 'ns', arguments: '{}' },
        { type: 'custom_tool_call_output', call_id: 'c1', output: 'ok' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'went' }] },
      ],
    });
    assert.deepEqual(chat.messages.slice(1), [
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"PATCH"}' } },
          { id: 'c2', type: 'function', function: { name: 'ns__go', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      { role: 'tool', tool_call_id: 'c2', content: 'went' },
    ]);
    assert.deepEqual(dropped, ['input[1]']);
  });

  test('the exact translation (a model with a native upstream) refuses each of these, so the request goes natively', () => {
    assert.throws(
      () =>
        responsesToChat({
          model: 'm',
          input: [
            { type: 'additional_tools', role: 'developer', tools: [] },
            { type: 'reasoning', encrypted_content: 'E' },
            { role: 'user', content: 'x' },
          ],
          tools: [
            { type: 'custom', name: 'p' },
            { type: 'namespace', name: 'n', tools: [] },
            { type: 'web_search' },
            { type: 'tool_search' },
          ],
          client_metadata: { a: 'b' },
          include: ['reasoning.encrypted_content'],
          reasoning: { effort: 'low', summary: 'auto' },
        }),
      (error: { code?: string; details?: { errors: Array<{ field: string }> } }) => {
        assert.equal(error.code, 'capability_not_supported');
        assert.deepEqual(error.details?.errors.map((e) => e.field).sort(), [
          'client_metadata',
          'include',
          'input[0].type',
          'input[1].type',
          'reasoning.summary',
          'tools[0].type',
          'tools[1].type',
          'tools[2].type',
          'tools[3].type',
        ]);
        return true;
      },
    );
  });
});

describe("web search: the chat body's web_search_options, and each provider's own search", () => {
  const search = {
    type: 'web_search',
    search_context_size: 'low',
    user_location: { type: 'approximate', city: 'Paris', country: 'FR' },
    filters: { allowed_domains: ['a.example'] },
  };

  test('mapped where every upstream of the model searches, with what chat has of it; left out by name where one does not', () => {
    const mapped = tolerant({ model: 'm', input: 'news?', tools: [search] });
    assert.deepEqual(mapped.chat.web_search_options, {
      search_context_size: 'low',
      user_location: { type: 'approximate', approximate: { city: 'Paris', country: 'FR' } },
    });
    assert.equal(mapped.chat.tools, undefined);
    assert.deepEqual(mapped.dropped, ['tools[0].filters']);
    const dropped = tolerant(
      {
        model: 'm',
        input: 'news?',
        tools: [search],
        prompt_cache_key: 'k',
        service_tier: 'flex',
        text: { verbosity: 'low' },
      },
      [],
    );
    assert.equal(dropped.chat.web_search_options, undefined);
    assert.deepEqual(dropped.dropped, ['tools[0]', 'service_tier', 'prompt_cache_key', 'text.verbosity']);
  });

  test("Anthropic's web search tool, with the location; Gemini's Google Search grounding, beside the functions", () => {
    const chat = {
      model: 'm',
      messages: [{ role: 'user' as const, content: 'news?' }],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      web_search_options: {
        search_context_size: 'low',
        user_location: { type: 'approximate', approximate: { city: 'Paris', country: 'FR' } },
      },
    };
    assert.deepEqual(toAnthropicRequest(chat, 'claude').tools, [
      { name: 'f', input_schema: { type: 'object' } },
      {
        type: 'web_search_20250305',
        name: 'web_search',
        user_location: { type: 'approximate', city: 'Paris', country: 'FR' },
      },
    ]);
    assert.deepEqual(toGeminiRequest(chat).tools, [
      { functionDeclarations: [{ name: 'f', parametersJsonSchema: { type: 'object' } }] },
      { googleSearch: {} },
    ]);
    assert.deepEqual(toGeminiRequest({ model: 'm', messages: chat.messages, web_search_options: {} }).tools, [
      { googleSearch: {} },
    ]);
  });
});
