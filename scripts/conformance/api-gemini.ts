// The mock's Gemini API (generateContent, streamGenerateContent with `alt=sse`): function declarations,
// functionResponse parts, and the answer as a GenerateContentResponse (streamed: one per `data:` line).
import type { ServerResponse } from 'node:http';
import { asArray, asRecord, stringParamsOf, textOf, type ParsedTurn, type Reply } from './task.js';
import { base64Bytes, joinTexts, type Conversation, type ImageSeen } from './conversation.js';
import { USAGE, writeJson, writeSse } from './wire.js';

/** An `inlineData` part's media type and size, or a `fileData` part's media type and address. */
function imageOfPart(part: Record<string, unknown>): ImageSeen | undefined {
  const inline = asRecord(part.inlineData ?? part.inline_data);
  if (typeof inline.data === 'string')
    return { mediaType: String(inline.mimeType ?? inline.mime_type ?? 'unknown'), bytes: base64Bytes(inline.data) };
  const file = asRecord(part.fileData ?? part.file_data);
  const uri = file.fileUri ?? file.file_uri;
  if (typeof uri === 'string') return { mediaType: String(file.mimeType ?? file.mime_type ?? 'unknown'), url: uri };
  return undefined;
}

/** `systemInstruction`'s text, the text and images of the `user` contents. */
function conversationOf(body: Record<string, unknown>): Conversation {
  const textOfParts = (parts: unknown): string =>
    joinTexts(
      asArray(parts)
        .map(asRecord)
        .filter((part) => typeof part.text === 'string')
        .map((part) => part.text as string),
    );
  const instruction = asRecord(body.systemInstruction ?? body.system_instruction);
  const userTexts: string[] = [];
  const images: ImageSeen[] = [];
  for (const content of asArray(body.contents).map(asRecord)) {
    if (content.role !== undefined && content.role !== 'user') continue;
    const text = textOfParts(content.parts);
    if (text !== '') userTexts.push(text);
    for (const part of asArray(content.parts).map(asRecord)) {
      const image = imageOfPart(part);
      if (image !== undefined) images.push(image);
    }
  }
  return { system: textOfParts(instruction.parts), userTexts, images };
}

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
    conversation: conversationOf(body),
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
