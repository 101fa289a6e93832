import type { ProblemList } from '../../http/validation-details.js';
import type { ChatMessage, ToolCall } from '../../providers/provider-contract.js';
import type { GeminiContent, GeminiFunctionResponse, GeminiPart } from '../../wire/gemini.js';
import type { TranslationNotes } from '../translation-notes.js';

/** What the translation of a request shares: where problems go, and where left-out hints are named. */
export interface GeminiContext {
  /** What chat cannot express: 400 capability_not_supported, each named. */
  readonly problems: ProblemList;
  /** What is wrong with the conversation itself (a result answering no call): 400 validation_failed. */
  readonly invalid: ProblemList;
  readonly notes: TranslationNotes | undefined;
}

/**
 * The calls of the conversation so far, to pair each `functionResponse` with its call. A call keeps the caller's
 * `id` (Gemini CLI makes one up, `read_file_<ms>_0`, and sends it in both parts); a call without one gets one made
 * from its name and place (`call_<name>_<content>_<part>`), the same on every request that repeats the history, so
 * the id a chat upstream saw last time is the id it sees again. A response names its call by `id` when it has one
 * the conversation made, else by `name`: the oldest call of that name not yet answered.
 */
class CallLedger {
  /** Each call's id, and whether it is answered yet. */
  private readonly answered = new Map<string, boolean>();
  /** By name, the calls in the order they were made (answered ones are skipped when met: each step is O(1) on average). */
  private readonly byName = new Map<string, { ids: string[]; next: number }>();

  call(id: string, name: string): void {
    this.answered.set(id, false);
    const calls = this.byName.get(name);
    if (calls) calls.ids.push(id);
    else this.byName.set(name, { ids: [id], next: 0 });
  }

  /** The id of the call `response` answers, or undefined when there is none. */
  answer(response: GeminiFunctionResponse): string | undefined {
    if (response.id !== undefined && this.answered.has(response.id)) {
      this.answered.set(response.id, true);
      return response.id;
    }
    const calls = this.byName.get(response.name);
    while (calls !== undefined && calls.next < calls.ids.length) {
      const id = calls.ids[calls.next++] as string;
      if (this.answered.get(id) === false) {
        this.answered.set(id, true);
        return id;
      }
    }
    return undefined;
  }
}

/** The id of a call that came without one: from its name and place, so that its response can be paired with it. */
export function madeCallId(name: string, content: number, part: number): string {
  return `call_${name.slice(0, 24)}_${content}_${part}`;
}

/**
 * `contents` as chat messages: a `model` turn is an assistant message (text, and `functionCall` parts as its
 * `tool_calls`); a `user` turn (or one without a role) is its `functionResponse` parts as `tool` messages (first, as
 * chat orders them), then the rest as one user message (text, and images: `inlineData` as a data URL, `fileData` as
 * its URI).
 */
export function contentsToMessages(contents: readonly GeminiContent[], context: GeminiContext): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const ledger = new CallLedger();
  contents.forEach((content, i) => {
    const at = `contents[${i}]`;
    const role = content.role ?? 'user';
    if (role === 'model') messages.push(modelMessage(content.parts, i, context, ledger));
    else if (role === 'user') messages.push(...userMessages(content.parts, at, context, ledger));
    else
      context.problems.add({
        field: `${at}.role`,
        problem: `role "${String(role).slice(0, 32)}" cannot be sent to a non-Gemini upstream`,
        allowed: ['user', 'model'],
      });
  });
  return messages;
}

/** `systemInstruction` as system text: its text parts, joined by a blank line (as the Gemini provider joins them). */
export function systemText(content: GeminiContent, context: GeminiContext): string {
  const texts: string[] = [];
  content.parts.forEach((part, j) => {
    if (typeof part.text === 'string') texts.push(part.text);
    else
      context.problems.add({
        field: `systemInstruction.parts[${j}]`,
        problem: 'only text can be a system instruction for a non-Gemini upstream',
      });
  });
  return texts.join('\n\n');
}

/**
 * A model turn. Its thoughts (`thought: true`) are the earlier answer's own reasoning summaries, and its
 * `thoughtSignature`s Gemini's proof of them (Gemini CLI puts `skip_thought_signature_validator` on every call it
 * echoes): no other provider can read either, and nothing the caller asked for is in them, so they are left out
 * (not named as dropped).
 */
function modelMessage(
  parts: readonly GeminiPart[],
  i: number,
  context: GeminiContext,
  ledger: CallLedger,
): ChatMessage {
  let text = '';
  const calls: ToolCall[] = [];
  parts.forEach((part, j) => {
    if (part.thought === true) return;
    const call = part.functionCall;
    if (call !== undefined) {
      const id = call.id ?? madeCallId(call.name, i, j);
      ledger.call(id, call.name);
      calls.push({ id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) } });
    } else if (typeof part.text === 'string') text += part.text;
    else
      context.problems.add({
        field: `contents[${i}].parts[${j}]`,
        problem: `a model turn's ${partKind(part)} part cannot be sent to a non-Gemini upstream`,
        allowed: ['text', 'functionCall', 'thought'],
      });
  });
  return {
    role: 'assistant',
    content: calls.length > 0 && text === '' ? null : text,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
  };
}

type ChatPart = Record<string, unknown>;

function userMessages(
  parts: readonly GeminiPart[],
  at: string,
  context: GeminiContext,
  ledger: CallLedger,
): ChatMessage[] {
  const results: ChatMessage[] = [];
  const content: ChatPart[] = [];
  parts.forEach((part, j) => {
    const where = `${at}.parts[${j}]`;
    if (part.functionResponse !== undefined) {
      const result = toolResult(part.functionResponse, where, context, ledger);
      if (result) results.push(result);
    } else if (typeof part.text === 'string') content.push({ type: 'text', text: part.text });
    else if (part.inlineData !== undefined)
      pushImage(
        content,
        part.inlineData.mimeType,
        `data:${part.inlineData.mimeType};base64,${part.inlineData.data}`,
        `${where}.inlineData`,
        context,
      );
    else if (part.fileData !== undefined)
      pushImage(content, part.fileData.mimeType, part.fileData.fileUri, `${where}.fileData`, context);
    else
      context.problems.add({
        field: where,
        problem: `a user turn's ${partKind(part)} part cannot be sent to a non-Gemini upstream`,
        allowed: ['text', 'inlineData', 'fileData', 'functionResponse'],
      });
  });
  if (content.length > 0)
    results.push({
      role: 'user',
      content: content.length === 1 && content[0]?.type === 'text' ? (content[0].text as string) : content,
    });
  return results;
}

/** An image as chat's `image_url` part (a data URL or the file's URI); other media have no chat part here. */
function pushImage(
  content: ChatPart[],
  mimeType: string | undefined,
  url: string,
  at: string,
  context: GeminiContext,
): void {
  if (mimeType === undefined || mimeType.startsWith('image/')) content.push({ type: 'image_url', image_url: { url } });
  else
    context.problems.add({
      field: `${at}.mimeType`,
      problem: `only images are carried to a non-Gemini upstream, not "${mimeType.slice(0, 64)}"`,
    });
}

/** A function's result as a `tool` message answering its call: the `response` object as JSON text. */
function toolResult(
  response: GeminiFunctionResponse,
  at: string,
  context: GeminiContext,
  ledger: CallLedger,
): ChatMessage | undefined {
  if (response.parts !== undefined)
    context.problems.add({
      field: `${at}.functionResponse.parts`,
      problem: 'media in a function result cannot be sent to a non-Gemini upstream',
    });
  for (const key of Object.keys(response)) {
    if (key !== 'id' && key !== 'name' && key !== 'response' && key !== 'parts')
      context.notes?.drop(`${at}.functionResponse.${key.slice(0, 64)}`, 'has no equivalent for a non-Gemini upstream');
  }
  const id = ledger.answer(response);
  if (id === undefined) {
    context.invalid.add({
      field: `${at}.functionResponse`,
      problem: `answers no earlier functionCall named "${response.name.slice(0, 64)}"${response.id === undefined ? '' : ` or with the id "${response.id.slice(0, 64)}"`}`,
    });
    return undefined;
  }
  return { role: 'tool', tool_call_id: id, content: JSON.stringify(response.response ?? {}) };
}

/** What kind of part this is, by its first field that is not a thought mark (for a problem's words). */
function partKind(part: GeminiPart): string {
  const kind = Object.keys(part).find((key) => key !== 'thought' && key !== 'thoughtSignature');
  return kind === undefined ? 'empty' : `"${kind.slice(0, 64)}"`;
}
