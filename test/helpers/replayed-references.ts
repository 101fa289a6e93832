/**
 * `item_reference`s in replayed client traffic (test/clients/conformance.test.ts). A client that stores responses (the AI
 * SDK's default) refers to the model's earlier text by the id of the output message that held it. A recording names
 * the recording server's id (the reply's `preamble.id`, test/fixtures/clients/README.md); a replay must name the id
 * the gateway gave that message in this replay instead — a translated path's own id (naming the stored response),
 * or on the native path the mock upstream's, passed on as it came — and check the upstream got the earlier text.
 */
import assert from 'node:assert/strict';
import type { WireApi } from './upstreams/scripted.js';
import { sseEvents } from './wire-validators.js';

type Json = Record<string, unknown>;

/** A recorded preamble as this replay answered it: the id the caller got for its message, and its text. */
export interface ReplayedPreamble {
  id: string;
  text: string;
}

/** The id of the first output message of a Responses answer (JSON, or the stream's `response.completed`). */
export function answeredMessageId(text: string, form: 'json' | 'sse' | 'json-array'): string | undefined {
  let response: Json | undefined;
  if (form === 'json') response = JSON.parse(text) as Json;
  else
    for (const event of sseEvents(text)) {
      const data = JSON.parse(event.data) as Json;
      if (data.type === 'response.completed') response = data.response as Json;
    }
  const message = ((response?.output ?? []) as Json[]).find((item) => item.type === 'message');
  return typeof message?.id === 'string' ? message.id : undefined;
}

/**
 * The request's body with each `item_reference` to a recorded preamble naming the id this replay gave it, and the
 * preambles so referred to. A body without one is returned as it is.
 */
export function withReplayedReferences(
  body: Json,
  preambles: ReadonlyMap<string, ReplayedPreamble>,
): { body: Json; referred: ReplayedPreamble[] } {
  if (!Array.isArray(body.input)) return { body, referred: [] };
  const referred: ReplayedPreamble[] = [];
  const input = (body.input as Json[]).map((item) => {
    const replayed = item.type === 'item_reference' ? preambles.get(String(item.id)) : undefined;
    if (replayed === undefined) return item;
    referred.push(replayed);
    return { ...item, id: replayed.id };
  });
  return referred.length === 0 ? { body, referred } : { body: { ...body, input }, referred };
}

const texts = (content: unknown): string[] =>
  typeof content === 'string'
    ? [content]
    : Array.isArray(content)
      ? (content as Json[]).filter((part) => typeof part.text === 'string').map((part) => part.text as string)
      : [];

/**
 * The upstream got the referred message: the `item_reference` as it is on a Responses wire (the native path), or
 * else, resolved by the gateway, its text as the model's earlier turn (an assistant message; a Gemini `model` turn).
 */
export function assertReferenceReached(wire: WireApi, upstream: Json, preamble: ReplayedPreamble, label: string): void {
  const shown = JSON.stringify(upstream).slice(0, 1500);
  if (wire === 'responses') {
    const input = (Array.isArray(upstream.input) ? upstream.input : []) as Json[];
    assert.ok(
      input.some((item) => item.type === 'item_reference' && item.id === preamble.id),
      `${label}: the item_reference to ${preamble.id} forwarded as it is: ${shown}`,
    );
    return;
  }
  const turns =
    wire === 'gemini'
      ? ((upstream.contents ?? []) as Json[]).filter((c) => c.role === 'model').map((c) => texts(c.parts))
      : ((upstream.messages ?? []) as Json[]).filter((m) => m.role === 'assistant').map((m) => texts(m.content));
  assert.ok(
    turns.some((parts) => parts.includes(preamble.text)),
    `${label}: the referred text ${JSON.stringify(preamble.text)} reaches the upstream as the model's turn: ${shown}`,
  );
}
