// The mock's Gemini API (generateContent, streamGenerateContent with `alt=sse`): function declarations,
// functionResponse parts, and the answer as a GenerateContentResponse (streamed: one per `data:` line).
import type { ServerResponse } from 'node:http';
import { asArray, asRecord, stringParamsOf, textOf, type ParsedTurn, type Reply } from './task.js';
import { USAGE, writeJson, writeSse } from './wire.js';

export function parseGemini(body: Record<string, unknown>, path: string): ParsedTurn {
  const tools = asArray(body.tools)
    .flatMap((tool) => asArray(asRecord(tool).functionDeclarations))
    .map(asRecord)
    .filter((declaration) => typeof declaration.name === 'string')
    .map((declaration) => ({
      name: declaration.name as string,
      stringParams: stringParamsOf(declaration.parametersJsonSchema ?? declaration.parameters),
    }));
  const toolResults: string[] = [];
  for (const content of asArray(body.contents).map(asRecord)) {
    for (const part of asArray(content.parts).map(asRecord)) {
      if ('functionResponse' in part) toolResults.push(textOf(asRecord(part.functionResponse).response));
    }
  }
  const model = /\/models\/([^/:]+):/.exec(path)?.[1] ?? 'mock-model';
  return {
    model,
    stream: path.includes(':streamGenerateContent'),
    tools,
    toolResults,
    jsonAsked: asRecord(body.generationConfig).responseMimeType === 'application/json',
  };
}

export function answerGemini(res: ServerResponse, turn: ParsedTurn, reply: Reply): void {
  const part =
    reply.kind === 'tool' ? { functionCall: { name: reply.tool.name, args: reply.args } } : { text: reply.text };
  const answer = {
    candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: {
      promptTokenCount: USAGE.input,
      candidatesTokenCount: USAGE.output,
      totalTokenCount: USAGE.input + USAGE.output,
    },
    modelVersion: turn.model,
  };
  if (turn.stream) writeSse(res, [[undefined, answer]]);
  else writeJson(res, 200, answer);
}
