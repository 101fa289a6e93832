import { GatewayError } from '../errors/gateway-error.js';
import { KeyScrubber } from '../secrets/key-scrubber.js';
import { KeyTexts } from '../secrets/key-texts.js';
import type { CallContext, ChatCompletionChunk, StreamChunk } from './provider-contract.js';

/**
 * A chat answer never carries the keys of its call: an upstream may repeat the key it was sent, in a
 * completion's text, a tool call's arguments, an id or a model name. Every provider's chat answer, JSON or stream,
 * passes through here before any surface reads it, so the chat API, the surfaces translated from it (Responses,
 * Messages, Gemini over another upstream) and a batch's chat lines all get it scrubbed.
 */

/** The scrubber of a call's keys: the upstream's configured key and the caller's X-Upstream-Key, when either is one. */
export function callScrubber(apiKey: string | undefined, context: CallContext): KeyScrubber | undefined {
  return KeyScrubber.of([context.apiKeyOverride, apiKey]);
}

/** A whole chat answer's JSON, scrubbed. */
export function scrubbedAnswer(json: string, scrubber: KeyScrubber | undefined): Buffer {
  return Buffer.from(scrubber === undefined ? json : scrubber.scrub(json));
}

/** The delta fields whose text a stream sends in pieces (a key may be split over several chunks). */
const TEXT_FIELDS = ['content', 'refusal', 'reasoning_content', 'reasoning'] as const;
/** Separates a text's id parts: a choice's index, then its field (or `tool` and the call's index). */
const SEP = '\u0000';
const TOOL = 'tool';
/** Choices whose text ids are remembered (an answer has one, or a few; a hostile stream may number them at will). */
const MAX_CHOICE_IDS = 16;

/**
 * The chunks of one chat stream, scrubbed in place as they are read: each delta text (content, refusal, reasoning,
 * each tool call's arguments) is followed across chunks (`KeyTexts`: what could begin a key is held back until the
 * next chunk decides, at most a key's length; a choice's held text goes out with its `finish_reason`), and each
 * chunk's JSON is scrubbed whole for the rest (ids, names). A chunk nothing was found in keeps the upstream's own
 * JSON; one that changed is written again.
 */
export class ChatStreamScrub {
  private readonly texts: KeyTexts;
  /** The last chunk seen: its id, time and model for a chunk that carries what was held at the stream's end. */
  private last: ChatCompletionChunk | undefined;

  constructor(
    private readonly scrubber: KeyScrubber,
    private readonly upstream: string,
  ) {
    this.texts = new KeyTexts(scrubber);
  }

  /** A stream's scrubbing, or undefined when the call has no key to look for. */
  static of(scrubber: KeyScrubber | undefined, upstream: string): ChatStreamScrub | undefined {
    return scrubber === undefined ? undefined : new ChatStreamScrub(scrubber, upstream);
  }

  /** One chunk, before it goes out (a chunk the caller never sees, `internal`, is left as it is). */
  chunk(item: StreamChunk): void {
    if (item.internal === true) return;
    const chunk = item.chunk;
    let changed = false;
    for (const choice of chunk.choices) {
      const ids = this.idsOf(choice.index);
      const id = ids[0] as string;
      const delta = choice.delta;
      // The content by name (a stream's usual delta: one monomorphic load), the other texts when there are any.
      const content = delta.content;
      if (typeof content === 'string') {
        const out = this.texts.push(ids[1] as string, content);
        if (out !== content) {
          delta.content = out;
          changed = true;
        }
      }
      if (delta.refusal !== undefined || delta.reasoning_content !== undefined || delta.reasoning !== undefined)
        changed = this.otherTexts(ids, delta) || changed;
      if (Array.isArray(delta.tool_calls)) changed = this.toolCalls(id, delta.tool_calls) || changed;
      if (choice.finish_reason !== null && choice.finish_reason !== undefined)
        changed = this.endChoice(id, delta) || changed;
    }
    this.last = chunk;
    if (item.templated === true) {
      // Its text outside the content is its template's, read once when the template was learnt.
      if (changed) item.json = JSON.stringify(chunk);
      return;
    }
    const json = changed || item.json === undefined ? JSON.stringify(chunk) : item.json;
    const scrubbed = this.scrubber.scrub(json);
    // A key elsewhere in the chunk (an id, a name): the chunk the surfaces read is the scrubbed one too.
    if (scrubbed !== json) item.chunk = this.parsed(scrubbed);
    item.json = scrubbed;
  }

  /**
   * A chunk's JSON read again after a key was replaced in it. Only a key holding `"` or `\\` (which no provider
   * issues) could leave it no JSON: then the stream fails rather than let the key through.
   */
  private parsed(json: string): ChatCompletionChunk {
    try {
      return JSON.parse(json) as ChatCompletionChunk;
    } catch {
      throw new GatewayError('upstream_stream_malformed', {
        upstream: this.upstream,
        reason: 'a chunk repeats the key in a form that cannot be scrubbed',
      });
    }
  }

  /**
   * What the texts still hold at the stream's end (a choice that never finished), as one more chunk; undefined when
   * they hold nothing (the usual end: every choice finished).
   */
  end(): StreamChunk | undefined {
    const rests = this.texts.endAll('');
    if (rests.length === 0) return undefined;
    const deltas = new Map<string, ChatCompletionChunk['choices'][number]['delta']>();
    for (const [id, rest] of rests) {
      const [index = '', field = 'content', tool] = id.split(SEP);
      const delta = deltas.get(index) ?? {};
      deltas.set(index, delta);
      append(delta, field, tool, rest);
    }
    const chunk: ChatCompletionChunk = {
      id: this.last?.id,
      object: 'chat.completion.chunk',
      created: this.last?.created,
      model: this.last?.model,
      choices: [...deltas].map(([index, delta]) => ({ index: Number(index), delta, finish_reason: null })),
    };
    return { chunk, json: JSON.stringify(chunk) };
  }

  /** The delta's texts but its content (TEXT_FIELDS after the first). Whether any changed. */
  private otherTexts(ids: readonly string[], delta: Record<string, unknown>): boolean {
    let changed = false;
    for (let f = 1; f < TEXT_FIELDS.length; f++) {
      const field = TEXT_FIELDS[f] as string;
      const text = delta[field];
      if (typeof text !== 'string') continue;
      const out = this.texts.push(ids[f + 1] as string, text);
      if (out !== text) {
        delta[field] = out;
        changed = true;
      }
    }
    return changed;
  }

  /** The ids of a choice's texts: its prefix, then one per TEXT_FIELDS (made once per choice; a few choices at most). */
  private idsOf(index: unknown): readonly string[] {
    if (index === this.lastIndex && this.lastIds !== undefined) return this.lastIds;
    this.lastIndex = index;
    this.lastIds = this.ids.get(index);
    if (this.lastIds !== undefined) return this.lastIds;
    const known = this.ids.get(index);
    if (known !== undefined) return known;
    const id = `${String(index)}${SEP}`;
    const ids = [id, ...TEXT_FIELDS.map((field) => id + field)];
    if (this.ids.size < MAX_CHOICE_IDS) this.ids.set(index, ids);
    this.lastIds = ids;
    return ids;
  }

  private readonly ids = new Map<unknown, readonly string[]>();
  private lastIndex: unknown;
  private lastIds: readonly string[] | undefined;

  private toolCalls(id: string, calls: unknown[]): boolean {
    let changed = false;
    calls.forEach((call, position) => {
      const entry = call as { index?: unknown; function?: { arguments?: unknown } };
      const fn = entry.function;
      if (typeof fn !== 'object' || fn === null || typeof fn.arguments !== 'string') return;
      const text = fn.arguments;
      const out = this.texts.push(`${id}${TOOL}${SEP}${String(entry.index ?? position)}`, text);
      if (out !== text) {
        fn.arguments = out;
        changed = true;
      }
    });
    return changed;
  }

  /** A choice finished: what its texts held goes out in this chunk's delta. Whether there was any. */
  private endChoice(id: string, delta: Record<string, unknown>): boolean {
    const rests = this.texts.endAll(id);
    for (const [textId, rest] of rests) {
      const [, field = 'content', tool] = textId.split(SEP);
      append(delta, field, tool, rest);
    }
    return rests.length > 0;
  }
}

/** Adds held text to a delta: to its field, or to the tool call of that index (a new entry when it has none). */
function append(delta: Record<string, unknown>, field: string, tool: string | undefined, rest: string): void {
  if (field !== TOOL || tool === undefined) {
    const had = delta[field];
    delta[field] = (typeof had === 'string' ? had : '') + rest;
    return;
  }
  const calls = Array.isArray(delta.tool_calls) ? (delta.tool_calls as unknown[]) : (delta.tool_calls = []);
  const index = Number(tool);
  const call = calls.find(
    (c): c is { function: { arguments: string } } =>
      typeof c === 'object' && c !== null && (c as { index?: unknown }).index === index,
  );
  if (call !== undefined && typeof call.function?.arguments === 'string') call.function.arguments += rest;
  else calls.push({ index, function: { arguments: rest } });
}
