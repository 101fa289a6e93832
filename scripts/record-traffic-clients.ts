/**
 * The clients the traffic recorder runs, each on its default settings with only its base URL and API key set, each
 * through one whole agent loop: ask for the weather, get a tool call (get_weather), run the tool, send its result
 * back, get the final answer. `run` gets the recording server's origin (`http://127.0.0.1:<port>`) and the key.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ClientFlow {
  /** The fixture's folder is `<client>-<version>` (version: of `packages[0]`), its file `<flow>.json`. */
  client: string;
  flow: string;
  /** The npm packages that make this client; the first one's version names the folder. */
  packages: string[];
  /** The folder the packages are installed in, when not the project's node_modules (installedVersion reads there). */
  installedIn?: () => string;
  description: string;
  /** The text the recording server's model writes before its tool call, in the same turn (none when undefined). */
  preamble?: string;
  run(origin: string, apiKey: string): Promise<void>;
}

export const PROMPT = 'What is the weather in Paris? Use the get_weather tool.';
export const TOOL_RESULT = '{"location":"Paris","temperature_c":21,"conditions":"sunny"}';
/** What the model says before its tool call in a flow with a preamble (as Claude usually does). */
export const PREAMBLE = 'Let me check the weather in Paris.';
const DESCRIPTION = 'The weather now in a city.';
const PARAMETERS = {
  type: 'object' as const,
  properties: { location: { type: 'string' as const, description: 'The city' } },
  required: ['location'],
  additionalProperties: false,
};

const require = createRequire(import.meta.url);

/** A package's installed version, read from its package.json (found from its entry point; or in `folder`'s node_modules). */
export function installedVersion(name: string, folder?: string): string {
  if (folder !== undefined)
    return (JSON.parse(readFileSync(join(folder, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
      .version;
  let dir = require.resolve(name);
  for (;;) {
    const slash = dir.lastIndexOf('/node_modules/');
    const root = `${dir.slice(0, slash)}/node_modules/${name}`;
    try {
      return (JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as { version: string }).version;
    } catch {
      if (slash <= 0) throw new Error(`no package.json for ${name}`);
      dir = dir.slice(0, slash);
    }
  }
}

function getWeather(args: { location?: unknown }): string {
  if (args.location !== 'Paris') throw new Error(`the model asked for ${JSON.stringify(args)}`);
  return TOOL_RESULT;
}

/** The final answer a loop ended with must be the script's: a loop that stopped early is not a recording. */
function expectFinal(text: string | null | undefined): void {
  if (!text?.includes('21 degrees'))
    throw new Error(`the loop did not end in the final answer: ${JSON.stringify(text)}`);
}

async function openAiChat(origin: string, apiKey: string): Promise<void> {
  const { default: OpenAI } = await import('openai');
  const client = new OpenAI({ baseURL: `${origin}/v1`, apiKey });
  // The SDK's own agent loop: it calls the tool and sends its result back until the model answers.
  const runner = client.chat.completions.runTools({
    model: 'gpt-4o-mini',
    stream: true,
    messages: [{ role: 'user', content: PROMPT }],
    tools: [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: DESCRIPTION,
          parameters: PARAMETERS,
          function: (args: { location?: unknown }) => getWeather(args),
          parse: JSON.parse,
        },
      },
    ],
  });
  expectFinal(await runner.finalContent());
}

async function openAiResponses(origin: string, apiKey: string): Promise<void> {
  const { default: OpenAI } = await import('openai');
  const client = new OpenAI({ baseURL: `${origin}/v1`, apiKey });
  const tools = [
    {
      type: 'function' as const,
      name: 'get_weather',
      description: DESCRIPTION,
      parameters: { ...PARAMETERS },
      strict: true,
    },
  ];
  const input: Array<Record<string, unknown>> = [{ role: 'user', content: PROMPT }];
  for (let turn = 0; turn < 3; turn++) {
    const response = await client.responses
      .stream({ model: 'gpt-4o-mini', input: input as never, tools })
      .finalResponse();
    const calls = response.output.filter((item) => item.type === 'function_call');
    if (calls.length === 0) return expectFinal(response.output_text);
    input.push(...(response.output as unknown as Array<Record<string, unknown>>));
    for (const call of calls)
      input.push({
        type: 'function_call_output',
        call_id: call.call_id,
        output: getWeather(JSON.parse(call.arguments) as { location?: unknown }),
      });
  }
  throw new Error('no final answer in 3 turns');
}

async function anthropicMessages(origin: string, apiKey: string): Promise<void> {
  const { default: Anthropic } = await import('@anthropic-ai/sdk');
  const client = new Anthropic({ baseURL: origin, apiKey });
  const tools = [{ name: 'get_weather', description: DESCRIPTION, input_schema: PARAMETERS }];
  const messages: Array<Record<string, unknown>> = [{ role: 'user', content: PROMPT }];
  for (let turn = 0; turn < 3; turn++) {
    const message = await client.messages
      .stream({ model: 'claude-sonnet-5', max_tokens: 1024, messages: messages as never, tools })
      .finalMessage();
    const uses = message.content.filter((block) => block.type === 'tool_use');
    if (uses.length === 0) return expectFinal(message.content.map((b) => (b.type === 'text' ? b.text : '')).join(''));
    messages.push({ role: 'assistant', content: message.content });
    messages.push({
      role: 'user',
      content: uses.map((use) => ({
        type: 'tool_result',
        tool_use_id: use.id,
        content: getWeather(use.input as { location?: unknown }),
      })),
    });
  }
  throw new Error('no final answer in 3 turns');
}

/**
 * The Anthropic SDK's own loop, `client.beta.messages.toolRunner` with a runnable tool (betaTool). Its first turn asks
 * for a message thread (`thread: {type: "create"}`, beta `message-threads-2026-08-12`); the recording server holds
 * none and refuses it as Anthropic does (`thread_unsupported_request`), as the gateway does for a translated model,
 * so the SDK sends the whole conversation without a thread on every turn after.
 */
async function anthropicToolRunner(origin: string, apiKey: string): Promise<void> {
  const { default: Anthropic } = await import('@anthropic-ai/sdk');
  const { betaTool } = await import('@anthropic-ai/sdk/helpers/beta/json-schema');
  const client = new Anthropic({ baseURL: origin, apiKey });
  const weather = betaTool({
    name: 'get_weather',
    description: DESCRIPTION,
    inputSchema: PARAMETERS,
    run: (args) => getWeather(args),
  });
  const final = await client.beta.messages
    .toolRunner({
      model: 'claude-sonnet-5',
      max_tokens: 1024,
      messages: [{ role: 'user', content: PROMPT }],
      tools: [weather],
    })
    .runUntilDone();
  expectFinal(final.content.map((b) => (b.type === 'text' ? b.text : '')).join(''));
}

/** The AI SDK's own loop (streamText with a tool that executes, stopWhen two steps), one provider model. */
async function aiSdk(
  model: 'openai-responses' | 'openai-chat' | 'anthropic',
  origin: string,
  apiKey: string,
): Promise<void> {
  const { streamText, tool, jsonSchema, stepCountIs } = await import('ai');
  const weather = tool({
    description: DESCRIPTION,
    inputSchema: jsonSchema<{ location: string }>(PARAMETERS),
    execute: async (args) => JSON.parse(getWeather(args)) as unknown,
  });
  let languageModel;
  if (model === 'anthropic') {
    const { createAnthropic } = await import('@ai-sdk/anthropic');
    languageModel = createAnthropic({ baseURL: `${origin}/v1`, apiKey })('claude-sonnet-5');
  } else {
    const { createOpenAI } = await import('@ai-sdk/openai');
    const provider = createOpenAI({ baseURL: `${origin}/v1`, apiKey });
    languageModel = model === 'openai-chat' ? provider.chat('gpt-4o-mini') : provider('gpt-4o-mini');
  }
  const result = streamText({
    model: languageModel,
    prompt: PROMPT,
    tools: { get_weather: weather },
    stopWhen: stepCountIs(3),
  });
  let text = '';
  for await (const part of result.textStream) text += part;
  expectFinal(text);
}

/**
 * The AI SDK's default multi-step tool loop: generateText with openai(model) (the Responses API, `store` on by
 * default), the model writing text before its tool call, so the second step refers to that text by `item_reference`
 * to the stored response's output message (the SDK sends the call and its result as they are).
 */
async function aiSdkGenerateWithPreamble(origin: string, apiKey: string): Promise<void> {
  const { generateText, tool, jsonSchema, stepCountIs } = await import('ai');
  const { createOpenAI } = await import('@ai-sdk/openai');
  const weather = tool({
    description: DESCRIPTION,
    inputSchema: jsonSchema<{ location: string }>(PARAMETERS),
    execute: async (args) => JSON.parse(getWeather(args)) as unknown,
  });
  const result = await generateText({
    model: createOpenAI({ baseURL: `${origin}/v1`, apiKey })('gpt-4o-mini'),
    prompt: PROMPT,
    tools: { get_weather: weather },
    stopWhen: stepCountIs(3),
  });
  if (result.steps[0]?.text !== PREAMBLE)
    throw new Error(`the first step's text is not the preamble: ${JSON.stringify(result.steps[0]?.text)}`);
  expectFinal(result.text);
}

async function openAiAgents(origin: string, apiKey: string): Promise<void> {
  const { default: OpenAI } = await import('openai');
  const agents = await import('@openai/agents');
  const { z } = await import('zod');
  agents.setDefaultOpenAIClient(new OpenAI({ baseURL: `${origin}/v1`, apiKey }));
  // Traces go to OpenAI's own trace service, not to the model's base URL: off, since the recording is offline.
  agents.setTracingDisabled(true);
  const weather = agents.tool({
    name: 'get_weather',
    description: DESCRIPTION,
    parameters: z.object({ location: z.string().describe('The city') }),
    execute: (args) => getWeather(args),
  });
  const agent = new agents.Agent({
    name: 'Weather agent',
    instructions: 'Answer weather questions with the get_weather tool.',
    tools: [weather],
  });
  const result = await agents.run(agent, PROMPT);
  expectFinal(String(result.finalOutput));
}

/** LangChain's loop as its docs write it: bindTools, invoke, a ToolMessage per call, invoke again. */
async function langChain(provider: 'openai' | 'anthropic', origin: string, apiKey: string): Promise<void> {
  const { tool } = await import('@langchain/core/tools');
  const { HumanMessage, ToolMessage } = await import('@langchain/core/messages');
  const { z } = await import('zod');
  const weather = tool((args: { location: string }) => getWeather(args), {
    name: 'get_weather',
    description: DESCRIPTION,
    schema: z.object({ location: z.string().describe('The city') }),
  });
  const model =
    provider === 'openai'
      ? new (await import('@langchain/openai')).ChatOpenAI({
          model: 'gpt-4o-mini',
          apiKey,
          configuration: { baseURL: `${origin}/v1` },
        })
      : new (await import('@langchain/anthropic')).ChatAnthropic({
          model: 'claude-sonnet-5',
          apiKey,
          anthropicApiUrl: origin,
        });
  const bound = model.bindTools([weather]);
  const messages: Array<
    InstanceType<typeof HumanMessage> | InstanceType<typeof ToolMessage> | Awaited<ReturnType<typeof bound.invoke>>
  > = [new HumanMessage(PROMPT)];
  for (let turn = 0; turn < 3; turn++) {
    const answer = await bound.invoke(messages);
    messages.push(answer);
    if (!answer.tool_calls?.length)
      return expectFinal(typeof answer.content === 'string' ? answer.content : JSON.stringify(answer.content));
    for (const call of answer.tool_calls)
      messages.push(new ToolMessage({ content: getWeather(call.args), tool_call_id: call.id ?? '' }));
  }
  throw new Error('no final answer in 3 turns');
}

/**
 * LlamaIndex is installed outside the project's dependencies: its @llamaindex/env asks for gpt-tokenizer ^2.5 as a
 * peer, and the gateway itself uses gpt-tokenizer 4 (npm refuses the pair without --legacy-peer-deps, which would
 * loosen every other dependency's check). Pinned here, installed once into a cache folder by the recorder.
 */
const LLAMAINDEX = {
  llamaindex: '0.12.1',
  '@llamaindex/workflow': '1.1.25',
  '@llamaindex/openai': '0.4.23',
  '@llamaindex/anthropic': '0.3.27',
  zod: '4.6.7',
};
const LLAMAINDEX_DIR = join(
  process.env.RECORD_TRAFFIC_CACHE ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'llm-gateway-clients'),
  `llamaindex-${LLAMAINDEX.llamaindex}`,
);

function run(command: string, args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')}: exit ${String(code)}`)),
    );
  });
}

async function installLlamaIndex(): Promise<void> {
  const marker = join(LLAMAINDEX_DIR, 'installed.json');
  const wanted = JSON.stringify(LLAMAINDEX);
  if (existsSync(marker) && readFileSync(marker, 'utf8') === wanted) return;
  mkdirSync(LLAMAINDEX_DIR, { recursive: true });
  writeFileSync(
    join(LLAMAINDEX_DIR, 'package.json'),
    JSON.stringify({ name: 'llamaindex-recording', private: true, type: 'module' }),
  );
  await run(
    'npm',
    ['install', '--save-exact', '--no-audit', '--no-fund', ...Object.entries(LLAMAINDEX).map(([n, v]) => `${n}@${v}`)],
    LLAMAINDEX_DIR,
  );
  writeFileSync(marker, wanted);
}

async function llamaIndex(provider: 'openai' | 'anthropic', origin: string, apiKey: string): Promise<void> {
  await installLlamaIndex();
  const runner = join(LLAMAINDEX_DIR, 'record-traffic-llamaindex.mjs');
  copyFileSync(join(dirname(fileURLToPath(import.meta.url)), 'record-traffic-llamaindex.mjs'), runner);
  await run(
    process.execPath,
    [
      runner,
      provider,
      origin,
      apiKey,
      JSON.stringify({ prompt: PROMPT, toolResult: TOOL_RESULT, description: DESCRIPTION }),
    ],
    LLAMAINDEX_DIR,
  );
}

export const FLOWS: ClientFlow[] = [
  {
    client: 'openai',
    flow: 'chat-completions-runtools-stream',
    packages: ['openai'],
    description: "chat.completions.runTools({stream: true}): the SDK's own tool loop",
    run: openAiChat,
  },
  {
    client: 'openai',
    flow: 'responses-stream',
    packages: ['openai'],
    description:
      'responses.stream with a function tool; the output items and a function_call_output sent back as input',
    run: openAiResponses,
  },
  {
    client: 'anthropic-sdk',
    flow: 'messages-stream',
    packages: ['@anthropic-ai/sdk'],
    description: 'messages.stream with a tool; the assistant content and a tool_result sent back',
    run: anthropicMessages,
  },
  {
    client: 'anthropic-sdk',
    flow: 'beta-tool-runner',
    packages: ['@anthropic-ai/sdk'],
    description:
      'beta.messages.toolRunner with a betaTool: a message thread asked for and refused (thread_unsupported_request), then the whole conversation each turn',
    run: anthropicToolRunner,
  },
  {
    client: 'ai-sdk',
    flow: 'openai-responses-stream',
    packages: ['ai', '@ai-sdk/openai'],
    description: 'streamText with openai(model) (the Responses API), a tool with execute, stopWhen stepCountIs(3)',
    run: (o, k) => aiSdk('openai-responses', o, k),
  },
  {
    client: 'ai-sdk',
    flow: 'openai-chat-stream',
    packages: ['ai', '@ai-sdk/openai'],
    description: 'streamText with openai.chat(model), a tool with execute, stopWhen stepCountIs(3)',
    run: (o, k) => aiSdk('openai-chat', o, k),
  },
  {
    client: 'ai-sdk',
    flow: 'anthropic-messages-stream',
    packages: ['ai', '@ai-sdk/anthropic'],
    description: 'streamText with anthropic(model), a tool with execute, stopWhen stepCountIs(3)',
    run: (o, k) => aiSdk('anthropic', o, k),
  },
  {
    client: 'ai-sdk',
    flow: 'openai-responses-generate-preamble',
    packages: ['ai', '@ai-sdk/openai'],
    description:
      'generateText with openai(model) (the Responses API, store on by default), a tool with execute, stopWhen stepCountIs(3); the model writes text before its tool call, so the second call refers to it by item_reference',
    preamble: PREAMBLE,
    run: aiSdkGenerateWithPreamble,
  },
  {
    client: 'openai-agents',
    flow: 'responses-run',
    packages: ['@openai/agents', 'openai'],
    description:
      "run(agent) with a function tool, the default model and the Responses API (tracing off: it goes to OpenAI's trace service)",
    run: openAiAgents,
  },
  {
    client: 'langchain-openai',
    flow: 'chat-invoke-tools',
    packages: ['@langchain/openai', '@langchain/core'],
    description: 'ChatOpenAI.bindTools, invoke, ToolMessage, invoke',
    run: (o, k) => langChain('openai', o, k),
  },
  {
    client: 'llamaindex',
    flow: 'openai-agent',
    packages: ['llamaindex', '@llamaindex/workflow', '@llamaindex/openai'],
    installedIn: () => LLAMAINDEX_DIR,
    description: 'agent({llm: openai(...), tools}).run(prompt) (@llamaindex/workflow)',
    run: (o, k) => llamaIndex('openai', o, k),
  },
  {
    client: 'llamaindex',
    flow: 'anthropic-agent',
    packages: ['llamaindex', '@llamaindex/workflow', '@llamaindex/anthropic'],
    installedIn: () => LLAMAINDEX_DIR,
    description: 'agent({llm: anthropic(...), tools}).run(prompt) (@llamaindex/workflow)',
    run: (o, k) => llamaIndex('anthropic', o, k),
  },
  {
    client: 'langchain-anthropic',
    flow: 'messages-invoke-tools',
    packages: ['@langchain/anthropic', '@langchain/core'],
    description: 'ChatAnthropic.bindTools, invoke, ToolMessage, invoke',
    run: (o, k) => langChain('anthropic', o, k),
  },
];
