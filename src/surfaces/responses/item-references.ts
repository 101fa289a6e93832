import { GatewayError, isGatewayError } from '../../errors/gateway-error.js';
import { objectOf, type JsonObject } from '../../wire/json.js';
import type { ResponsesInputItem, ResponsesRequest } from '../../wire/openai-responses.js';
import type { NativeReference } from '../native-ownership.js';
import { responseOfItem } from './ids.js';
import type { ResponseHistory } from './response-history.js';

/** The most stored responses one request's `item_reference`s may read (each is one store read and one parse). */
export const MAX_REFERENCED_RESPONSES = 64;

/** A request's input with its `item_reference`s to the caller's stored responses replaced by the items they name. */
export interface ResolvedInput {
  input: ResponsesInputItem[];
  /** The references no stored response of this caller holds (an upstream's own id, someone else's, or unknown). */
  unresolved: NativeReference[];
  /** Whether any reference was replaced (the input differs from the caller's). */
  replaced: boolean;
}

/**
 * Replaces each `item_reference` whose id names an output item of one of the caller's stored responses (ids.ts
 * outputItemId) with that item, as OpenAI resolves its own (the AI SDK sends one for every earlier answer when
 * `store` is on). One read per response named, at most MAX_REFERENCED_RESPONSES; another caller's response reads
 * as unknown. Undefined when the input has no reference (the common case: nothing is copied).
 */
export async function resolveItemReferences(
  history: ResponseHistory | undefined,
  caller: string,
  input: ResponsesRequest['input'],
): Promise<ResolvedInput | undefined> {
  if (!Array.isArray(input) || !input.some((item) => objectOf(item)?.type === 'item_reference')) return undefined;
  // Every reference checked and the responses it names collected first, then read together: no read is left
  // running (and no failure unheard) when a later item is refused.
  const places = new Map<number, { responseId: string; index: number }>();
  const responseIds = new Set<string>();
  input.forEach((item, i) => {
    if (item.type !== 'item_reference') return;
    if (typeof item.id !== 'string')
      throw new GatewayError('validation_failed', { field: `input[${i}].id`, problem: 'must be a string' });
    const place = responseOfItem(item.id);
    if (!place) return;
    places.set(i, place);
    if (!history || responseIds.has(place.responseId)) return;
    if (responseIds.size >= MAX_REFERENCED_RESPONSES)
      throw new GatewayError('validation_failed', {
        field: `input[${i}]`,
        problem: `item_reference items may name items of at most ${MAX_REFERENCED_RESPONSES} stored responses`,
      });
    responseIds.add(place.responseId);
  });
  const outputs = new Map(
    history
      ? await Promise.all([...responseIds].map(async (id) => [id, await storedOutput(history, caller, id)] as const))
      : [],
  );
  const unresolved: NativeReference[] = [];
  let references = 0;
  const resolved = input.map((item, i): ResponsesInputItem => {
    if (item.type !== 'item_reference') return item;
    references++;
    const id = item.id as string;
    const place = places.get(i);
    const found = place ? outputs.get(place.responseId)?.[place.index] : undefined;
    if (found !== undefined && found.id === id) {
      // Without its id: an upstream that speaks the Responses API would look that id up in its own store.
      const { id: _id, ...item } = found;
      return item;
    }
    unresolved.push({ id, field: `input[${i}].id` });
    return item;
  });
  return { input: resolved, unresolved, replaced: unresolved.length < references };
}

/** The output items of the caller's stored response `id`; undefined when it holds none by that id. */
async function storedOutput(history: ResponseHistory, caller: string, id: string): Promise<JsonObject[] | undefined> {
  let text: string;
  try {
    text = await history.response(caller, id);
  } catch (error) {
    if (isGatewayError(error) && error.code === 'response_not_found') return undefined;
    throw error;
  }
  const output = objectOf(JSON.parse(text))?.output;
  return Array.isArray(output) ? output.map((item: unknown) => objectOf(item) ?? {}) : undefined;
}
