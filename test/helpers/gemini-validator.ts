/**
 * Google's Gemini API's validator (see wire-validators.ts): a GenerateContentResponse (JSON), or a stream of them —
 * `alt=sse` as both Google SDKs and Gemini CLI parse it (events split on a blank line, each one `data: ` line of
 * JSON, nothing else: an `event:`, `id:` or comment line, or a second `data:` line, makes the SDKs drop the event or
 * stall, and a last event without its blank line is their "Incomplete JSON segment at the end"), or the JSON array
 * of them (no `alt`). Gemini has no end marker: a stream ends well when its last response carries the finish reason
 * (Gemini CLI retries a stream that ended without one) and the usage. Every response repeats the same `responseId`
 * and `modelVersion`; a function call comes whole (its name, its args an object); an `error` object among the
 * responses is a failure, whatever came before it.
 */
import assert from 'node:assert/strict';
import type { ToolCall, Turn } from './wire-validators.js';

type Json = Record<string, unknown>;

/** google.ai.generativelanguage's FinishReason values (a function call ends with STOP: there is no TOOL_CALLS). */
const FINISH_REASONS = new Set([
  'FINISH_REASON_UNSPECIFIED',
  'STOP',
  'MAX_TOKENS',
  'SAFETY',
  'RECITATION',
  'LANGUAGE',
  'OTHER',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'MALFORMED_FUNCTION_CALL',
  'IMAGE_SAFETY',
  'UNEXPECTED_TOOL_CALL',
  'TOO_MANY_TOOL_CALLS',
  'IMAGE_PROHIBITED_CONTENT',
  'NO_IMAGE',
  'IMAGE_RECITATION',
  'IMAGE_OTHER',
  'CONTINUATION',
  'MALFORMED_RESPONSE',
]);

/** The data a model's part may carry (one of them; `thought` and `thoughtSignature` go beside). */
const PART_DATA = ['text', 'functionCall', 'inlineData', 'fileData', 'executableCode', 'codeExecutionResult'];

const USAGE_FIGURES = [
  'promptTokenCount',
  'candidatesTokenCount',
  'totalTokenCount',
  'cachedContentTokenCount',
  'thoughtsTokenCount',
  'toolUsePromptTokenCount',
];

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** What the responses of one answer say together, response by response. */
class GeminiAnswer {
  text = '';
  readonly calls: ToolCall[] = [];
  finish: string | undefined;
  usage = false;
  private responseId: string | undefined;
  private modelVersion: string | undefined;
  private count = 0;

  check(response: unknown, where: string): void {
    assert.ok(isObject(response), `${where}: a JSON object`);
    assert.ok(!('error' in response), `${where}: a failure: ${JSON.stringify(response).slice(0, 400)}`);
    assert.equal(this.finish, undefined, `${where}: a response after the one with finishReason ${this.finish}`);
    const feedback = response.promptFeedback as Json | undefined;
    assert.equal(
      feedback?.blockReason,
      undefined,
      `${where}: the prompt was blocked (${String(feedback?.blockReason)})`,
    );
    this.same('responseId', response.responseId, where);
    this.same('modelVersion', response.modelVersion, where);
    this.count += 1;
    if (response.usageMetadata !== undefined) this.checkUsage(response.usageMetadata, where);
    if (response.candidates === undefined) return;
    assert.ok(Array.isArray(response.candidates), `${where}: candidates is a list`);
    response.candidates.forEach((candidate, i) => this.candidate(candidate, `${where} candidates[${i}]`));
  }

  /** The whole answer ended well: a finish reason (in the last response) and the usage. */
  turn(where: string): Turn {
    assert.ok(this.count > 0, `${where}: no response`);
    assert.ok(this.finish !== undefined, `${where}: ends without a finishReason (Gemini CLI retries such a stream)`);
    assert.ok(this.usage, `${where}: usageMetadata`);
    return { text: this.text, toolCalls: this.calls, stop: this.finish };
  }

  /** A value every response repeats: a string, the same in each one that has it. */
  private same(name: 'responseId' | 'modelVersion', value: unknown, where: string): void {
    if (value === undefined) return;
    assert.equal(typeof value, 'string', `${where}: ${name} is a string`);
    const known = this[name];
    if (known === undefined) this[name] = value as string;
    else assert.equal(value, known, `${where}: every response has the answer's ${name}`);
  }

  private checkUsage(usage: unknown, where: string): void {
    assert.ok(isObject(usage), `${where}: usageMetadata is an object`);
    for (const figure of USAGE_FIGURES) {
      const value = usage[figure];
      assert.ok(
        value === undefined || (Number.isSafeInteger(value) && (value as number) >= 0),
        `${where}: usageMetadata.${figure} is a count: ${String(value)}`,
      );
    }
    this.usage = true;
  }

  private candidate(candidate: unknown, where: string): void {
    assert.ok(isObject(candidate), `${where}: an object`);
    // One candidate (nobody asked for candidateCount): index 0, or none (Gemini leaves a default 0 out).
    assert.ok(candidate.index === undefined || candidate.index === 0, `${where}: index ${String(candidate.index)}`);
    if (candidate.content !== undefined) {
      const content = candidate.content;
      assert.ok(isObject(content), `${where}: content is an object`);
      assert.equal(content.role, 'model', `${where}: content.role`);
      assert.ok(Array.isArray(content.parts), `${where}: content.parts is a list`);
      content.parts.forEach((part, i) => this.part(part, `${where} parts[${i}]`));
    }
    if (candidate.finishReason !== undefined) {
      assert.ok(
        FINISH_REASONS.has(candidate.finishReason as string),
        `${where}: finishReason ${String(candidate.finishReason)}`,
      );
      this.finish = candidate.finishReason as string;
    }
  }

  private part(part: unknown, where: string): void {
    assert.ok(isObject(part), `${where}: an object`);
    const data = PART_DATA.filter((key) => part[key] !== undefined);
    assert.equal(data.length, 1, `${where}: one of ${PART_DATA.join(', ')}: ${JSON.stringify(part).slice(0, 200)}`);
    assert.ok(part.thought === undefined || typeof part.thought === 'boolean', `${where}: thought is a boolean`);
    assert.ok(
      part.thoughtSignature === undefined || typeof part.thoughtSignature === 'string',
      `${where}: thoughtSignature is a string`,
    );
    if (part.text !== undefined) {
      assert.equal(typeof part.text, 'string', `${where}: text is a string`);
      if (part.thought !== true) this.text += part.text as string;
    }
    if (part.functionCall !== undefined) {
      const call = part.functionCall;
      assert.ok(isObject(call), `${where}: functionCall is an object`);
      assert.ok(typeof call.name === 'string' && call.name !== '', `${where}: functionCall.name`);
      assert.ok(call.args === undefined || isObject(call.args), `${where}: functionCall.args is an object`);
      assert.ok(call.id === undefined || typeof call.id === 'string', `${where}: functionCall.id is a string`);
      this.calls.push({
        id: (call.id as string | undefined) ?? '',
        name: call.name,
        arguments: JSON.stringify(call.args ?? {}),
      });
    }
  }
}

function parse(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    assert.fail(`${where}: not JSON: ${text.slice(0, 200)}`);
  }
}

/** `generateContent`: one GenerateContentResponse. */
export function validateGeminiJson(text: string): Turn {
  const answer = new GeminiAnswer();
  const body = parse(text, 'answer');
  answer.check(body, 'answer');
  assert.ok(
    Array.isArray((body as Json).candidates) && ((body as Json).candidates as unknown[]).length > 0,
    'answer: candidates',
  );
  return answer.turn('answer');
}

/** `streamGenerateContent?alt=sse`: the events as the SDKs split and read them. */
export function validateGeminiStream(text: string): Turn {
  const pieces = text.split(/\r\n\r\n|\n\n|\r\r/);
  assert.equal(pieces.pop(), '', 'the last event ends with a blank line (else: "Incomplete JSON segment at the end")');
  assert.ok(pieces.length > 0, 'no events');
  const answer = new GeminiAnswer();
  pieces.forEach((piece, n) => {
    const where = `event ${n}`;
    const event = piece.trim();
    assert.ok(event.startsWith('data: '), `${where}: a data: line and nothing else: ${event.slice(0, 200)}`);
    assert.ok(!/[\r\n]/.test(event), `${where}: one line (the SDKs read one data line): ${event.slice(0, 200)}`);
    answer.check(parse(event.slice('data: '.length), where), where);
  });
  return answer.turn('stream');
}

/** `streamGenerateContent` without `alt`: one JSON array of GenerateContentResponses. */
export function validateGeminiJsonArray(text: string): Turn {
  const body = parse(text, 'stream');
  assert.ok(Array.isArray(body), 'stream: one JSON array');
  const answer = new GeminiAnswer();
  body.forEach((response, n) => answer.check(response, `response ${n}`));
  return answer.turn('stream');
}
