// LlamaIndex's agent loop for the traffic recorder (scripts/record-traffic-clients.ts), run as its own process from
// the folder LlamaIndex is installed in (outside the project: see there why), so its imports resolve there.
// Usage: node record-traffic-llamaindex.mjs <openai|anthropic> <origin> <api key> <json: {prompt, toolResult, description}>
import { tool } from 'llamaindex';
import { agent } from '@llamaindex/workflow';
import { openai } from '@llamaindex/openai';
import { anthropic, AnthropicSession } from '@llamaindex/anthropic';
import { z } from 'zod';

const [provider, origin, apiKey, scriptJson] = process.argv.slice(2);
const script = JSON.parse(scriptJson);
const weather = tool({
  name: 'get_weather',
  description: script.description,
  parameters: z.object({ location: z.string().describe('The city') }),
  execute: ({ location }) => {
    if (location !== 'Paris') throw new Error(`the model asked for ${location}`);
    return script.toolResult;
  },
});
const llm =
  provider === 'openai'
    ? openai({ model: 'gpt-4o-mini', apiKey, baseURL: `${origin}/v1` })
    : anthropic({ model: 'claude-sonnet-4-5', session: new AnthropicSession({ apiKey, baseURL: origin }) });
const result = await agent({ llm, tools: [weather] }).run(script.prompt);
const text = String(result.data.result ?? '');
if (!text.includes('21 degrees')) throw new Error(`the loop did not end in the final answer: ${text}`);
