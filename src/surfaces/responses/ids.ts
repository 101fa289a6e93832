import { randomUUID } from 'node:crypto';

export type IdPrefix = 'resp' | 'msg' | 'fc' | 'fco' | 'ctc' | 'ctco';

/**
 * Ids in OpenAI's style: a type prefix and 32 hex digits (a random UUID's 122 random bits: unguessable, so an id
 * is no handle). randomUUID draws from a cached entropy pool: much cheaper than randomBytes per id on the
 * Responses route (docs/benchmarks.md).
 */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomUUID().replaceAll('-', '')}`;
}

/** The most output items of one response whose ids name it (past this an item gets a random id). */
const MAX_NAMED_ITEMS = 0xffff;

/**
 * The id of a translated response's output item: its prefix, the response's 32 hex digits and the item's place in
 * `output` (4 hex digits), so that an `item_reference` to it names the stored response that holds it
 * (item-references.ts) — a reference costs one read of that response, and no index of items is kept.
 */
export function outputItemId(responseId: string, prefix: 'msg' | 'fc' | 'ctc', index: number): string {
  const hex = responseId.slice('resp_'.length);
  if (hex.length !== 32 || index < 0 || index > MAX_NAMED_ITEMS) return newId(prefix);
  return `${prefix}_${hex}${index.toString(16).padStart(4, '0')}`;
}

const OUTPUT_ITEM_ID = /^(?:msg|fc|ctc)_([0-9a-f]{32})([0-9a-f]{4})$/;

/** The stored response an output item id names and the item's place in it (outputItemId), or undefined. */
export function responseOfItem(id: string): { responseId: string; index: number } | undefined {
  const match = OUTPUT_ITEM_ID.exec(id);
  if (!match) return undefined;
  return { responseId: `resp_${match[1] as string}`, index: Number.parseInt(match[2] as string, 16) };
}
